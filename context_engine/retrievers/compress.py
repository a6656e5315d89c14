"""Context compression: keep only the sentences that bear on the question, within a token budget.

Offline (the default) the compressor is extractive: every sentence of every candidate document is
scored by the question's content terms it contains, each term weighted by its IDF over the candidate
sentences (a term in every sentence says nothing), as a fraction of the question's total weight.
A matching sentence next to a hit gets a small share of the hit's score: the sentence after "we
switched to Redis" that names Redis again is likely the one that says why. Sentences are taken best first until the budget
is spent; each document keeps its chosen sentences in their original order and its metadata, plus
`metadata["compressed_from"]` (its original token count); documents with nothing relevant are
dropped. With a chat model the model picks the relevant sentence numbers (JSON mode), and the
extractive scores only order its picks for the budget; unusable model output falls back to the
extractive choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from pydantic import BaseModel, Field

from context_engine.chat_models import structured_output
from context_engine.text import count_tokens, split_sentences, tokenize

__all__ = ["MIN_RELEVANCE", "NEIGHBOUR_BONUS", "compress", "content_terms", "coverage", "idf_weights", "unit_tokens"]

# Function words of Chinese questions (jieba tokens) and English question filler: they match
# everywhere and say nothing about which sentence answers (English stopwords are dropped by tokenize).
QUESTION_FILLER = frozenset(
    """
的 了 是 在 和 与 及 或 吗 呢 吧 啊 么 什么 为什么 怎么 怎样 如何 哪些 哪个 哪 谁 多少 几 我们 我 你 他 她 它 他们
到 这 那 这个 那个 一个 有 没有 被 把 给 对 就 都 也 还 要 会 能 可以 请 上 中 下
""".split()
) | frozenset(
    tokenize(  # as stems ("describe" -> "describ"), which is what they are compared with
        """tell explain describe about there any some all not no so than then these those into out over
    also can could would should may might much many more most get got please does did do"""
    )
)

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
# A matching sentence gets this fraction of its best neighbour's own score.
NEIGHBOUR_BONUS = 0.25
# Below this score a sentence does not bear on the question (e.g. one minor term of five).
MIN_RELEVANCE = 0.2


def content_terms(text: str) -> list[str]:
    """The content words of `text` as the BM25 index sees them (jieba for Chinese, Snowball stems
    for English), stopwords and question filler dropped, first occurrences in order."""
    seen: dict[str, None] = {}
    for token in tokenize(text, drop_stopwords=True):
        if token not in QUESTION_FILLER:
            seen.setdefault(token, None)
    return list(seen)


def unit_tokens(text: str) -> set[str]:
    """The tokens a question term is looked up in: `tokenize(text)`, plus every 1-4 character
    substring of its Chinese runs, so that "缓存" is found in a sentence jieba cut as "会话缓存从"
    (jieba segments a question and a passage differently)."""
    tokens = set(tokenize(text))
    for run in _CJK_RUN.findall(text):
        tokens.update(run[i : i + n] for n in range(1, 5) for i in range(len(run) - n + 1))
    return tokens


def idf_weights(terms: Iterable[str], units: Sequence[set[str]]) -> dict[str, float]:
    """Lucene-style IDF, log(1 + (N - n + 0.5) / (n + 0.5)), of each term over the token sets
    `units` (sentences or windows); never negative, and > 0 for a term found nowhere."""
    n = len(units)
    return {t: math.log1p((n - (df := sum(t in u for u in units)) + 0.5) / (df + 0.5)) for t in terms}


def coverage(terms: Iterable[str], unit: set[str], weights: dict[str, float]) -> float:
    """The IDF-weighted fraction of `terms` that occur in the token set `unit` (0..1)."""
    terms = list(terms)
    total = sum(weights[t] for t in terms)
    return sum(weights[t] for t in terms if t in unit) / total if total else 0.0


@dataclass
class _Sentence:
    doc: int
    position: int
    text: str
    tokens: int
    score: float = 0.0


class _Picks(BaseModel):
    """The model's answer: the ids ("doc.sentence", e.g. "2.3") of the sentences that bear on the question."""

    sentences: list[str] = Field(default_factory=list)


def _sentences(docs: Sequence[Document]) -> list[list[_Sentence]]:
    return [
        [_Sentence(d, i, s, count_tokens(s)) for i, s in enumerate(split_sentences(doc.page_content))]
        for d, doc in enumerate(docs)
    ]


def _score(question: str, per_doc: list[list[_Sentence]]) -> None:
    """Set each sentence's score: its IDF-weighted query-term coverage, plus the neighbour bonus."""
    terms = content_terms(question)
    flat = [s for sentences in per_doc for s in sentences]
    token_sets = [unit_tokens(s.text) for s in flat]
    weights = idf_weights(terms, token_sets)
    own = [coverage(terms, tokens, weights) for tokens in token_sets]
    index = 0
    for sentences in per_doc:
        scores = own[index : index + len(sentences)]
        for i, sentence in enumerate(sentences):
            neighbours = [scores[j] for j in (i - 1, i + 1) if 0 <= j < len(scores)]
            # Only a sentence that matches something itself gets the bonus: the greeting next
            # to the answer stays out.
            sentence.score = scores[i] + NEIGHBOUR_BONUS * max(neighbours, default=0.0) * (scores[i] > 0)
        index += len(sentences)


def _llm_picks(question: str, per_doc: list[list[_Sentence]], llm: Any) -> set[tuple[int, int]] | None:
    """(doc, position) of the sentences the model picks, or None when its output is unusable."""
    from context_engine.prompts import COMPRESS_SYSTEM

    numbered = "\n\n".join(
        f"Document {d + 1}:\n" + "\n".join(f"[{d + 1}.{s.position + 1}] {s.text}" for s in sentences)
        for d, sentences in enumerate(per_doc)
        if sentences
    )
    valid = {f"{s.doc + 1}.{s.position + 1}": (s.doc, s.position) for sentences in per_doc for s in sentences}
    try:
        out: _Picks = (
            structured_output(llm, _Picks)
            .with_retry(stop_after_attempt=2)
            .invoke([("system", COMPRESS_SYSTEM), ("human", f"Question: {question}\n\n{numbered}")])
        )
    except Exception:  # noqa: BLE001 - a model that fails or writes malformed JSON: the extractive choice stands
        return None
    picks = [str(p).strip().strip("[]") for p in out.sentences]
    if picks and not any(p in valid for p in picks):
        return None  # ids that name no sentence: the model did not follow the format
    return {valid[p] for p in picks if p in valid}


def compress(
    question: str, docs: list[Document], budget_tokens: int, llm: Any = None, keep_best: int = 0
) -> list[Document]:
    """The parts of `docs` that bear on `question`, at most `budget_tokens` in all (chunking.count_tokens).

    Documents keep their order, id and metadata (plus `compressed_from`, the original token count);
    a document's sentences keep their order, one per line; documents with no relevant sentence
    are dropped. `llm`: a LangChain chat model that picks the sentences; None = extractive.
    """
    per_doc = _sentences(docs)
    _score(question, per_doc)
    # The first `keep_best` documents (the reranker's top) keep at least their best matching sentence:
    # a thread that says "double charges" where the question says "duplicate charges" still bears on it.
    best = {id(max(sentences, key=lambda s: s.score)) for sentences in per_doc[:keep_best] if sentences}
    candidates = [
        s for sentences in per_doc for s in sentences if s.score >= MIN_RELEVANCE or (s.score > 0 and id(s) in best)
    ]
    if llm is not None and any(per_doc):
        picks = _llm_picks(question, per_doc, llm)
        if picks is not None:
            candidates = [s for sentences in per_doc for s in sentences if (s.doc, s.position) in picks]
    candidates.sort(key=lambda s: (-s.score, s.doc, s.position))
    chosen: dict[int, list[_Sentence]] = {}
    spent = 0
    for sentence in candidates:
        if spent + sentence.tokens <= budget_tokens:
            chosen.setdefault(sentence.doc, []).append(sentence)
            spent += sentence.tokens
    out: list[Document] = []
    for d, doc in enumerate(docs):
        if d not in chosen:
            continue
        # One sentence per line: a kept heading or list item stays a block of its own downstream.
        text = "\n".join(s.text for s in sorted(chosen[d], key=lambda s: s.position))
        metadata = {**doc.metadata, "compressed_from": count_tokens(doc.page_content)}
        out.append(Document(page_content=text, id=doc.id, metadata=metadata))
    return out

"""RAG evaluation of the whole graph with RAGAS: `context-engine eval rag --dataset clapnq|FILE`.

Each question goes through the main graph (`context_graph`, with the run context of the tenant being
evaluated); the answer and the compressed contexts it was composed from are scored against the
references with RAGAS:

- offline, always: NonLLMContextPrecisionWithReference and NonLLMContextRecall (contexts vs. the
  reference contexts, sentence by sentence), IDBasedContextPrecision/Recall (the contexts' record refs
  vs. the reference ids), NonLLMStringSimilarity and ExactMatch (answer vs. reference), and BleuScore,
  ChrfScore, RougeScore where the reference is whitespace-tokenized text (not Chinese or Japanese) and
  their packages (sacrebleu, rouge-score) are installed;
- with a judge model: Faithfulness and AnswerRelevancy on the answered questions, LLMContextRecall.

Besides: the decline rate on unanswerable questions, the answer rate on answerable ones, and latency.

Datasets: `clapnq` ingests the 600 CLAP NQ dev passages as `documents` of tenant "clapnq" and asks
its 600 questions, answerable and unanswerable alternating (so `--limit N` is a balanced slice); a
FILE is JSON lines `{question, reference, reference_contexts?, reference_context_ids?, answerable?}`
asked of an existing tenant.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any, Callable, Sequence

from context_engine.text import split_sentences

__all__ = ["RagQuestion", "RagRun", "RagReport", "CLAPNQ_TENANT", "clapnq_questions", "ingest_clapnq",
           "load_questions", "run_question", "score", "evaluate_rag"]

CLAPNQ_TENANT = "clapnq"

# Whitespace-tokenized n-gram metrics say nothing about text written without spaces.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass
class RagQuestion:
    question: str
    reference: str | None = None                 # a reference answer
    reference_contexts: list[str] = field(default_factory=list)
    reference_context_ids: list[str] = field(default_factory=list)
    answerable: bool | None = None               # None: not known
    id: str = ""


@dataclass
class RagRun:
    answer: str
    declined: bool
    route: str
    contexts: list[dict[str, Any]]               # the compressed hits the answer was composed from
    seconds: float

    @property
    def context_ids(self) -> list[str]:
        return list(dict.fromkeys(str(h.get("doc_ref") or h.get("id")) for h in self.contexts))


@dataclass
class RagReport:
    metrics: dict[str, float | None]
    info: dict[str, Any]
    latencies: list[float]
    items: list[dict[str, Any]]


def clapnq_questions(root: Path | None = None) -> tuple[list[RagQuestion], list[dict[str, Any]]]:
    """(questions, documents to ingest): answerable and unanswerable questions alternating."""
    from context_engine.eval.clapnq import DATA_DIR, load_clapnq

    questions, passages = load_clapnq(root or DATA_DIR)
    converted = [RagQuestion(q.question, q.answers[0] if q.answers else None, q.reference_contexts,
                             [q.passage_id] if q.answerable else [], q.answerable, q.id) for q in questions]
    answerable = [q for q in converted if q.answerable]
    unanswerable = [q for q in converted if not q.answerable]
    alternating = [q for q in chain.from_iterable(zip_longest(answerable, unanswerable)) if q is not None]
    documents = [{"doc_id": pid, "title": d.metadata["title"], "body": d.page_content, "acl": ["*"]}
                 for pid, d in passages.items()]
    return alternating, documents


def ingest_clapnq(settings, documents: list[dict[str, Any]], progress=None) -> None:
    """Write the passages as `documents` of tenant "clapnq" and index them (unchanged ones stay as they are)."""
    from context_engine.ingest import ingest

    # CLAP NQ is public Wikipedia text: the whole (evaluation) tenant may read it.
    ingest(settings.with_overrides(tenant=CLAPNQ_TENANT), {CLAPNQ_TENANT: {"documents": documents}}, progress=progress,
           public=True)


def load_questions(path: Path) -> list[RagQuestion]:
    """A JSON-lines question file; raises ValueError naming the first bad line."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            question = str(row["question"]).strip()
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: expected a JSON object with `question` ({exc})") from None
        if not question:
            raise ValueError(f"{path}:{number}: the question is empty")
        questions.append(RagQuestion(question, row.get("reference"), list(row.get("reference_contexts") or []),
                                     [str(i) for i in row.get("reference_context_ids") or []],
                                     row.get("answerable"), str(row.get("id", number))))
    return questions


def run_question(question: str, context: dict[str, Any]) -> RagRun:
    """Ask the main graph. It is streamed rather than invoked because the compressed contexts (what the
    answer is composed from, what RAGAS calls the retrieved contexts) are internal state, not output."""
    from context_engine.assistant.graph import graph as context_graph

    started = time.perf_counter()
    contexts: list[dict[str, Any]] = []
    output: dict[str, Any] = {}
    for mode, chunk in context_graph.stream({"question": question}, context=context,
                                            stream_mode=["updates", "values"]):
        if mode == "values":
            output = chunk
        elif "compress" in chunk:  # the last compression (after any reflect retry) is the one answered from
            contexts = chunk["compress"]["contexts"]
    return RagRun(output.get("answer", ""), bool(output.get("declined")), output.get("route", ""), contexts,
                  time.perf_counter() - started)


def _offline_metrics() -> tuple[dict[str, Any], dict[str, str]]:
    """(metric objects by name, unavailable metric -> why)."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with warnings.catch_warnings():
        # ragas 0.4.3 points to ragas.metrics.collections, which lacks several of these.
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import (BleuScore, ChrfScore, ExactMatch, IDBasedContextPrecision, IDBasedContextRecall,
                                   NonLLMContextPrecisionWithReference, NonLLMContextRecall, NonLLMStringSimilarity,
                                   RougeScore)
    metrics = {"non_llm_context_precision_with_reference": NonLLMContextPrecisionWithReference(),
               "non_llm_context_recall": NonLLMContextRecall(),
               "id_based_context_precision": IDBasedContextPrecision(),
               "id_based_context_recall": IDBasedContextRecall(),
               "non_llm_string_similarity": NonLLMStringSimilarity(), "exact_match": ExactMatch()}
    unavailable = {}
    for name, factory in (("bleu_score", BleuScore), ("chrf_score", ChrfScore), ("rouge_score", RougeScore)):
        try:
            metrics[name] = factory()
        except ImportError as exc:  # sacrebleu / rouge-score are optional extras of ragas
            unavailable[name] = str(exc)
    return metrics, unavailable


def _llm_metrics(judge, embeddings) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.embeddings import LangchainEmbeddingsWrapper
        from ragas.llms import LangchainLLMWrapper
        from ragas.metrics import AnswerRelevancy, Faithfulness, LLMContextRecall

        llm = LangchainLLMWrapper(judge)
        return {"faithfulness": Faithfulness(llm=llm),
                "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=LangchainEmbeddingsWrapper(embeddings)),
                "llm_context_recall": LLMContextRecall(llm=llm)}


_CONTEXT_METRICS = ("non_llm_context_precision_with_reference", "non_llm_context_recall")
_ID_METRICS = ("id_based_context_precision", "id_based_context_recall")
_NGRAM_METRICS = ("bleu_score", "chrf_score", "rouge_score")


def _applies(name: str, q: RagQuestion, run: RagRun) -> bool:
    """Which questions a metric scores: those with the reference it compares against; faithfulness and
    answer relevancy only answered questions (a decline makes no claims)."""
    if name in _CONTEXT_METRICS:
        return bool(q.reference_contexts)
    if name in _ID_METRICS:
        return bool(q.reference_context_ids)
    if name in ("faithfulness", "answer_relevancy"):
        return not run.declined and bool(run.contexts)
    if name in _NGRAM_METRICS:
        return bool(q.reference) and not _UNSPACED.search(q.reference)
    return bool(q.reference)  # string similarity, exact match, LLM context recall


def score(questions: Sequence[RagQuestion], runs: Sequence[RagRun], *, judge=None, embeddings=None,
          progress: Callable[[], None] | None = None) -> RagReport:
    """RAGAS scores (mean over the questions each metric applies to), rates and latencies.

    `judge` (a LangChain chat model) adds the LLM metrics; AnswerRelevancy also needs `embeddings`.
    `progress()` is called once per question scored."""
    from ragas.dataset_schema import SingleTurnSample
    from ragas.exceptions import RagasOutputParserException

    metrics, unavailable = _offline_metrics()
    if judge is not None:
        metrics.update(_llm_metrics(judge, embeddings))
    scores: dict[str, list[float]] = {name: [] for name in metrics}
    failures: Counter = Counter()
    items = []
    for q, run in zip(questions, runs):
        # Sentence by sentence: reference contexts are sentences, and the non-LLM metrics compare whole strings.
        sentences = [s for hit in run.contexts for s in split_sentences(hit.get("text", ""))]
        item = {"id": q.id, "question": q.question, "answerable": q.answerable, "route": run.route,
                "declined": run.declined, "seconds": round(run.seconds, 4), "answer": run.answer,
                "context_ids": run.context_ids, "scores": {}}
        for name, metric in metrics.items():
            if not _applies(name, q, run):
                continue
            retrieved = sentences if name in _CONTEXT_METRICS else [hit.get("text", "") for hit in run.contexts]
            if not retrieved and name in _CONTEXT_METRICS + _ID_METRICS:
                # Nothing retrieved recalls nothing (RAGAS itself fails on an empty list).
                scores[name].append(0.0)
                item["scores"][name] = 0.0
                continue
            sample = SingleTurnSample(user_input=q.question, response=run.answer, reference=q.reference,
                                      retrieved_contexts=retrieved, reference_contexts=q.reference_contexts or None,
                                      retrieved_context_ids=run.context_ids,
                                      reference_context_ids=q.reference_context_ids or None)
            try:
                value = float(metric.single_turn_score(sample))
            except RagasOutputParserException:  # a judge whose output does not parse: no score, counted
                value = float("nan")
            if value != value:  # NaN: the judge gave no usable verdict
                failures[name] += 1
                continue
            scores[name].append(value)
            item["scores"][name] = round(value, 4)
        items.append(item)
        if progress:
            progress()

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    answerable = [r for q, r in zip(questions, runs) if q.answerable is True]
    unanswerable = [r for q, r in zip(questions, runs) if q.answerable is False]
    info = {"questions": len(runs), "answerable": len(answerable), "unanswerable": len(unanswerable),
            "decline_rate_unanswerable": mean([float(r.declined) for r in unanswerable]),
            "answer_rate_answerable": mean([float(not r.declined) for r in answerable]),
            "routes": ", ".join(f"{route} {n}" for route, n in sorted(Counter(r.route for r in runs).items())),
            "judge": "yes" if judge is not None else "none (offline metrics only)"}
    info.update({f"{name} (scored)": len(values) for name, values in scores.items()})
    info.update({f"{name} (no verdict)": n for name, n in failures.items()})
    info.update({f"{name} (unavailable)": why for name, why in unavailable.items()})
    return RagReport({name: mean(values) for name, values in scores.items()}, info,
                     [r.seconds for r in runs], items)


def evaluate_rag(questions: Sequence[RagQuestion], context: dict[str, Any], *, judge=None, embeddings=None,
                 progress: Callable[[str], None] | None = None) -> RagReport:
    """Run every question through the graph with the run `context` (tenant, data_dir, ...), then score.
    `progress(stage)` is called after each question asked ("ask") and each scored ("score")."""
    runs = []
    for q in questions:
        runs.append(run_question(q.question, context))
        if progress:
            progress("ask")
    return score(questions, runs, judge=judge, embeddings=embeddings,
                 progress=(lambda: progress("score")) if progress else None)

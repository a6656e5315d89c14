"""Second-stage rerankers over the fused hits (docs/ARCHITECTURE.md, the semantic half), one interface for all of them.

`make_reranker(settings, llm=None)` reads `settings.reranker`:

- ``"offline"`` (default): a linear re-scoring of the fused list from features the hits already
  carry: their fused position, their BM25 and dense ranks (`metadata["ranks"]`), and how much of the
  query the chunk text and title cover (words and adjacent word pairs, BM25 tokens). The weights were
  fit on SciFact **train** by the grid in `context_engine.eval.retrieval.tune`; with the fused
  position alone it reproduces the fused order, and the grid contains that point, so on train it is
  never worse than the fused list.
- ``"none"``: keeps the fused order.
- ``"llm"``: a chat model (any LangChain chat model) judges each hit relevant or not (JSON mode);
  relevant hits move up, the fused order breaks ties.
- ``"cross-encoder:<name or path>"``: a sentence-transformers `CrossEncoder`, loaded with
  `local_files_only=True` (nothing is downloaded); `RerankerError` when it is not available locally.

`rerank(query, docs, top_n)` scores every given hit and returns the best `top_n` (all when None),
best first, as copies carrying `metadata["rerank_score"]`; no hit is dropped below `top_n` or
repeated.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.documents import Document
from pydantic import BaseModel, Field

from context_engine.chat_models import structured_output
from context_engine.config import Settings
from context_engine.text import tokenize

__all__ = [
    "OFFLINE_FEATURES",
    "CrossEncoderReranker",
    "LLMReranker",
    "NoReranker",
    "OfflineReranker",
    "OfflineWeights",
    "Reranker",
    "RerankerError",
    "make_reranker",
    "offline_features",
]


class RerankerError(RuntimeError):
    """The configured reranker cannot be used (unknown name, model not available, no chat model)."""


class Reranker:
    """Subclasses implement `scores(query, docs)`: one float per doc, higher is better."""

    name = "reranker"

    def scores(self, query: str, docs: Sequence[Document]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def rerank(self, query: str, docs: Sequence[Document], top_n: int | None = None) -> list[Document]:
        if not docs:
            return []
        scores = np.asarray(self.scores(query, docs), dtype=np.float64)
        # A stable sort: equal scores keep the incoming (fused) order.
        order = np.argsort(-scores, kind="stable")[: len(docs) if top_n is None else max(top_n, 0)]
        return [
            docs[i].model_copy(update={"metadata": {**docs[i].metadata, "rerank_score": float(scores[i])}})
            for i in order
        ]


class NoReranker(Reranker):
    """The fused order, unchanged (scores fall with the position)."""

    name = "none"

    def scores(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        return -np.arange(len(docs), dtype=np.float64)


# ------------------------------------------------------------------------------------ offline
OFFLINE_FEATURES = ("fused", "bm25", "dense", "words", "pairs", "title")


def _discount(rank: int | None) -> float:
    """1 at rank 1, falling like DCG's discount; 0 when the list did not return the hit."""
    return 1.0 / math.log2(rank + 1) if rank else 0.0


def _coverage(terms: Sequence[Any], present: set) -> float:
    distinct = set(terms)
    return len(distinct & present) / len(distinct) if distinct else 0.0


def offline_features(query: str, docs: Sequence[Document]) -> np.ndarray:
    """(len(docs), len(OFFLINE_FEATURES)) features, each in [0, 1]:

    fused: the discounted position in `docs`; bm25, dense: the discounted rank in that retriever's
    list (`metadata["ranks"]`); words, pairs: the share of the query's distinct words and adjacent
    word pairs found in the chunk (BM25 tokens, stopwords dropped); title: the share of the query's
    words in the title.
    """
    terms = tokenize(query, drop_stopwords=True)
    pairs = list(itertools.pairwise(terms))
    rows = []
    for position, doc in enumerate(docs, start=1):
        tokens = tokenize(doc.page_content, drop_stopwords=True)
        ranks = doc.metadata.get("ranks") or {}
        rows.append(
            (
                _discount(position),
                _discount(ranks.get("bm25")),
                _discount(ranks.get("dense")),
                _coverage(terms, set(tokens)),
                _coverage(pairs, set(itertools.pairwise(tokens))),
                _coverage(terms, set(tokenize(doc.metadata.get("title") or "", drop_stopwords=True))),
            )
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(docs), len(OFFLINE_FEATURES))


@dataclass(frozen=True)
class OfflineWeights:
    """One weight per feature of `offline_features`, in `OFFLINE_FEATURES` order.

    The defaults are a best point of the grid in `context_engine.eval.retrieval.OFFLINE_GRID`, fit
    on SciFact train (`python -m context_engine.eval.retrieval --beir DIR --split train`) over the
    convex-fused top 30, chosen on two corpus subsets of train (+0.002, +0.003 nDCG@10 over the fused
    order); on the full train split it gives 0.7165 against 0.7160 fused: the features mostly re-weigh
    what fusion already saw, so the gain is small.
    """

    fused: float = 1.0
    bm25: float = 0.5
    dense: float = 1.0
    words: float = 0.0
    pairs: float = 1.0
    title: float = 0.5

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, name) for name in OFFLINE_FEATURES], dtype=np.float64)


class OfflineReranker(Reranker):
    name = "offline"

    def __init__(self, weights: OfflineWeights | None = None):
        self.weights = weights or OfflineWeights()

    def scores(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        return offline_features(query, docs) @ self.weights.vector()


# ------------------------------------------------------------------------------------ LLM
class Relevance(BaseModel):
    relevant: bool = Field(description="true when the passage helps answer the question, else false")


_LLM_PROMPT = """You judge search results. Question:
{query}

Passage (title: {title}):
{text}

Does this passage contain information that helps answer the question? Reply with JSON only:
{{"relevant": true}} or {{"relevant": false}}"""

# Characters of a passage shown to the model: enough for an abstract or a chunk, bounded for small models.
LLM_PASSAGE_CHARS = 2000


class LLMReranker(Reranker):
    """Yes/no relevance from a chat model, one judgement per hit (a failed judgement counts as 0.5)."""

    name = "llm"

    def __init__(self, llm: Any):
        self.judge = structured_output(llm, Relevance).with_retry(stop_after_attempt=2)

    def scores(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        prompts = [
            _LLM_PROMPT.format(
                query=query, title=doc.metadata.get("title") or "-", text=doc.page_content[:LLM_PASSAGE_CHARS]
            )
            for doc in docs
        ]
        verdicts = self.judge.batch(prompts, config={"max_concurrency": 4}, return_exceptions=True)
        return np.array([0.5 if isinstance(v, BaseException) else float(v.relevant) for v in verdicts])


# ------------------------------------------------------------------------------------ cross-encoder
@lru_cache(maxsize=2)
def _cross_encoder(name: str) -> Any:
    try:
        from sentence_transformers import CrossEncoder  # lazy: the import costs seconds
    except ImportError as exc:
        raise RerankerError(f"cross-encoder reranker needs sentence-transformers ({exc})") from None
    try:
        return CrossEncoder(name, local_files_only=True)
    except (OSError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RerankerError(
            f"cross-encoder model {name!r} is not available locally (nothing is downloaded): {reason}"
        ) from None


class CrossEncoderReranker(Reranker):
    name = "cross-encoder"

    def __init__(self, model: str):
        self.model = _cross_encoder(model)

    def scores(self, query: str, docs: Sequence[Document]) -> np.ndarray:
        pairs = [(query, doc.page_content) for doc in docs]
        return np.asarray(self.model.predict(pairs, show_progress_bar=False), dtype=np.float64).reshape(len(docs))


# ------------------------------------------------------------------------------------ factory
def make_reranker(settings: Settings, llm: Any = None) -> Reranker:
    """The reranker `settings.reranker` names; `llm` (a LangChain chat model) is needed for "llm"."""
    spec = settings.reranker.strip()
    if spec == "offline":
        return OfflineReranker()
    if spec == "none":
        return NoReranker()
    if spec == "llm":
        if llm is None:
            raise RerankerError("reranker 'llm' needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")
        return LLMReranker(llm)
    if spec.startswith("cross-encoder:") and spec.split(":", 1)[1].strip():
        return CrossEncoderReranker(spec.split(":", 1)[1].strip())
    raise RerankerError(f"unknown reranker {spec!r}: use offline, none, llm or cross-encoder:<model name or path>")

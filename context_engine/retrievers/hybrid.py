"""Hybrid retrieval over a tenant's `SemanticIndex`: BM25 and dense lists fused into one (LangChain retriever).

`HybridRetriever.invoke(query)` returns the fused chunks; `search_lists(query)` returns the BM25,
dense and fused lists together, so the graph can show what each retriever found. Both lists are
asked for k chunks, fused by reciprocal rank fusion or a convex score combination
(`retrievers/fusion.py`), and the fused list is cut to k.

The access filter (`principals`) is a field set by code — `make_retriever(settings, principals)` —
never by the model or the query: every list only ever holds chunks those principals may read.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from context_engine.config import Settings
from context_engine.retrievers.fusion import RRF_K, convex, rrf
from context_engine.retrievers.index import SemanticIndex
from context_engine.runtime import semantic_index_for

__all__ = ["HybridRetriever", "make_retriever"]


class HybridRetriever(BaseRetriever):
    """BM25 + dense retrieval over one tenant's index, restricted to what `principals` may read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SemanticIndex
    principals: tuple[str, ...] = ()
    k: int = Field(default=50, ge=1, description="chunks asked of each list, and returned fused")
    fusion: Literal["rrf", "convex"] = "rrf"
    weights: tuple[float, float] = (1.0, 1.0)  # (bm25, dense)
    rrf_k: int = RRF_K

    def search_lists(self, query: str, k: int | None = None) -> dict[str, list[Document]]:
        """{"bm25": [...], "dense": [...], "fused": [...]}, each best first, at most k long."""
        k = self.k if k is None else k
        lists = {"bm25": self.index.search_bm25(query, k, self.principals),
                 "dense": self.index.search_dense(query, k, self.principals)}
        ranked = [[(doc.id, doc.metadata["score"]) for doc in docs] for docs in lists.values()]
        if self.fusion == "rrf":
            fused = rrf(ranked, list(self.weights), self.rrf_k)
        else:
            fused = convex(ranked, list(self.weights))
        by_id: dict[str, Document] = {}
        ranks: dict[str, dict[str, int]] = {}
        for name, docs in lists.items():
            for doc in docs:
                by_id.setdefault(doc.id, doc)
                ranks.setdefault(doc.id, {})[name] = doc.metadata["ranks"][name]
        lists["fused"] = [
            Document(page_content=by_id[chunk_id].page_content, id=chunk_id,
                     metadata={**by_id[chunk_id].metadata, "score": score, "retriever": "hybrid",
                               "ranks": ranks[chunk_id]})
            for chunk_id, score in fused[:k]]
        return lists

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        return self.search_lists(query, k)["fused"]


def make_retriever(settings: Settings, principals: list[str] | tuple[str, ...]) -> HybridRetriever:
    """The retriever for the run's tenant, configured from `settings`, reading as `principals`."""
    return HybridRetriever(index=semantic_index_for(settings), principals=tuple(principals),
                           k=settings.retrieve_k, fusion=settings.fusion,
                           weights=(settings.bm25_weight, settings.dense_weight), rrf_k=settings.rrf_k)

"""Hybrid retrieval over a tenant's `SemanticIndex`: BM25 and dense lists fused into one (LangChain retriever).

`HybridRetriever.invoke(query)` returns the fused list; `search_lists(query)` returns the BM25 and
dense lists, so the graph can show what each retriever found and fuse them with structured rows.
Both lists are asked for k chunks and fused per record by reciprocal rank fusion or a convex score
combination (`retrievers/fusion.fuse_hits`, the one fusion of the engine); the fused list is cut to k.

The access filter (`principals`) is a field set by code — the graph's retriever factory,
`assistant.retriever.make_retriever(settings)` — never by the model or the query: every list only
ever holds chunks those principals may read.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from context_engine.retrievers.fusion import RRF_K, fuse_hits
from context_engine.retrievers.hits import hit_to_dict, hit_to_document
from context_engine.retrievers.index import SemanticIndex

__all__ = ["HybridRetriever"]


class HybridRetriever(BaseRetriever):
    """BM25 + dense retrieval over one tenant's index, restricted to what `principals` may read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SemanticIndex
    principals: tuple[str, ...] = ()
    k: int = Field(default=50, ge=1, description="chunks asked of each list, and returned fused")
    fusion: Literal["rrf", "convex"] = "rrf"
    weights: tuple[float, float] = (1.0, 1.0)  # (bm25, dense)
    rrf_k: int = RRF_K
    fused: bool = Field(default=True, description="False: return both lists as found, each document's "
                                                  "metadata naming its retriever (the graph fuses them itself)")

    def search_lists(self, query: str, k: int | None = None) -> dict[str, list[Document]]:
        """{"bm25": [...], "dense": [...]}: what each retriever found, best first, at most k chunks each."""
        k = self.k if k is None else k
        return {"bm25": self.index.search_bm25(query, k, self.principals),
                "dense": self.index.search_dense(query, k, self.principals)}

    def fuse(self, lists: dict[str, list[Document]]) -> list[Document]:
        """The lists fused per record by `fusion.fuse_hits` (the graph's fuse node does the same with
        structured rows as a third list): each record once, with its best chunk and its rank in each list."""
        hits = fuse_hits({name: [hit_to_dict(doc) for doc in docs] for name, docs in lists.items()}, self.fusion,
                         {"bm25": self.weights[0], "dense": self.weights[1]}, self.rrf_k)
        return [hit_to_document(hit) for hit in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        k = self.k if k is None else k
        lists = self.search_lists(query, k)
        if not self.fused:
            return [doc for docs in lists.values() for doc in docs]
        return self.fuse(lists)[:k]

"""The retriever factory: the run tenant's hybrid retriever, reading as the run's asker.

The access filter is injected here, by code, from the run context; nothing the model or the
question says can widen it. Every hit is also checked against the store as it is now (`LiveAccess`),
so a record whose access narrowed after the index was built is never served from the index's older list.
"""

from __future__ import annotations

from context_engine.answering.links import thread_table
from context_engine.config import Settings
from context_engine.resources import principals_for, semantic_index_for, store_for
from context_engine.retrievers.hybrid import HybridRetriever, LiveAccess


def make_retriever(settings: Settings, *, fused: bool = True) -> HybridRetriever:
    """`fused=False`: the BM25 and dense lists as found (the graph fuses them with structured rows)."""
    principals = tuple(principals_for(settings))
    store = store_for(settings)
    return HybridRetriever(
        index=semantic_index_for(settings),
        principals=principals,
        k=settings.retrieve_k,
        fusion=settings.fusion,
        weights=(settings.bm25_weight, settings.dense_weight),
        rrf_k=settings.rrf_k,
        fused=fused,
        live=LiveAccess(store, settings.tenant, principals, thread_refs=_threads(store, settings.tenant)),
    )


def _threads(store, tenant: str):
    """A thread's message refs from the tenant's link table, opened on the first thread checked."""
    table = []

    def refs(channel_id: str, thread_ts: str) -> list[str]:
        if not table:
            table.append(thread_table(store, tenant))
        return table[0].thread(channel_id, thread_ts)

    return refs

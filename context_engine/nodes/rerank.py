"""The rerank node: a second-stage scorer over the fused top-k (structured-only answers keep query order)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.retrievers.hits import hit_to_dict, hit_to_document
from context_engine.retrievers.rerank import make_reranker
from context_engine.runtime import chat_model_for


def rerank(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    fused = state.get("fused", [])
    if state.get("route") == "structured":
        return {"reranked": fused}
    reranker = make_reranker(settings, llm=chat_model_for(settings))
    docs = reranker.rerank(state.get("search_query") or state["question"],
                           [hit_to_document(h) for h in fused[:settings.rerank_k]], top_n=settings.context_k)
    return {"reranked": [hit_to_dict(d) for d in docs]}

"""The compress node: only the sentences that bear on the question, within the token budget."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.retrievers.compress import compress as compress_docs
from context_engine.retrievers.hits import hit_to_dict, hit_to_document
from context_engine.runtime import chat_model_for


KEEP_BEST = 3  # the reranker's top hits keep their best matching sentence even below the relevance floor


def compress(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    reranked = state.get("reranked", [])
    if state.get("route") == "structured":
        return {"contexts": reranked}
    docs = compress_docs(state["question"], [hit_to_document(h) for h in reranked], settings.context_tokens,
                         llm=chat_model_for(settings), keep_best=KEEP_BEST)
    return {"contexts": [hit_to_dict(d) for d in docs]}

"""The retrieve node: BM25 and dense hits of the tenant's semantic index the asker may read."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.retrievers.hits import hit_to_dict
from context_engine.retrievers.hybrid import make_retriever
from context_engine.runtime import principals_for


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    # The access filter is the asker's, injected here by code; a retry after reflection widens k.
    retriever = make_retriever(settings, principals_for(settings))
    k = settings.retrieve_k * 2 ** state.get("reflections", 0)
    lists = retriever.search_lists(state.get("search_query") or state["question"], k=k)
    return {"semantic": {name: [hit_to_dict(doc) for doc in docs] for name, docs in lists.items()}}

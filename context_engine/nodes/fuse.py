"""The fuse node: structured rows, BM25 hits and dense hits become one list of records."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.retrievers.fusion import fuse_hits
from context_engine.retrievers.hits import rows_to_hits


def fuse(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    lists: dict[str, list[dict[str, Any]]] = {}
    if state.get("outcome") == "success" and state.get("plan"):
        lists["structured"] = rows_to_hits(state.get("rows", []), state["plan"]["collection"], settings.tenant)
    if state.get("route") != "structured":
        lists.update(state.get("semantic", {}))
    weights = {"structured": settings.structured_weight, "bm25": settings.bm25_weight, "dense": settings.dense_weight}
    return {"fused": fuse_hits(lists, settings.fusion, weights, settings.rrf_k)}

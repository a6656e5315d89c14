"""The route node: structured half, semantic half, or both."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.answering.route import route_question
from context_engine.config import check_question
from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.runtime import asker_for, catalog_for, chat_model_for, parse_now


def route(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    check_question(state.get("question"))  # before any work: a 900 KB "question" costs nothing
    settings = context_settings(runtime)
    catalog = catalog_for(settings)
    decision = route_question(state["question"], settings=settings, catalog=catalog,
                              asker=asker_for(settings, catalog), now=parse_now(state.get("now")),
                              llm=chat_model_for(settings))
    return {"route": decision.route, "route_reasons": decision.reasons, "search_query": state["question"],
            "reflections": 0}


def branches(state: State) -> list[str]:
    """Where the question goes next; "hybrid" runs both halves in parallel."""
    return {"structured": ["structured_query"], "semantic": ["retrieve"]}.get(
        state["route"], ["structured_query", "retrieve"])

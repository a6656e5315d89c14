"""Nodes of the structured subgraph. Each reads the state, calls the query engine, returns an update."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import StructuredState
from context_engine.query import engine
from context_engine.query.plan import Attempt, Plan
from context_engine.runtime import asker_for, catalog_for, llm_planner_for, parse_now, store_for


def _planning_context(state: StructuredState, runtime: Runtime[Context]):
    settings = context_settings(runtime)
    catalog = catalog_for(settings)
    planner = llm_planner_for(settings)
    ctx, failed = engine.resolve(state["question"], parse_now(state.get("now")), catalog,
                                 asker_for(settings, catalog), _tiebreak(state, planner))
    if ctx is not None:
        ctx.previous = [Attempt(Plan(**{k: a["plan"][k] for k in ("collection", "pipeline", "planner")}), a["error"])
                        for a in state.get("attempts", []) if a.get("error")]
    return settings, catalog, planner, ctx, failed


def _tiebreak(state: StructuredState, planner):
    """The resolve node asks the model to break a tie once; later nodes reuse its choice."""
    resolution = state.get("resolution")
    if resolution is None:
        return planner.tiebreak if planner else None
    chosen = {p["person"]["key"] for p in resolution.get("people", [])}
    return lambda question, mention: next((p for p in mention.candidates if p.key in chosen), None)


def resolve_question(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    _, _, _, ctx, failed = _planning_context(state, runtime)
    if failed:
        return {"resolution": {"error": failed.message, "candidates": [p.to_json() for p in failed.candidates]},
                "outcome": failed.kind, "rows": []}
    people = [{"text": m.text, "person": m.person.to_json(), "asker": m.is_asker} for m in ctx.mentions]
    times = [{"text": t.text, "start": t.start, "end": t.end} for t in ctx.times]
    return {"resolution": {"people": people, "times": times}}


def generate_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    _, _, planner, ctx, _ = _planning_context(state, runtime)
    try:
        plan = engine.plan(ctx, planner)
    except Exception as exc:  # an unparseable model answer is a failed attempt, fed back next time
        plan = Plan("?", [], planner="llm")
        return {"plan": plan.to_json(), "error": f"planner error: {exc}"}
    if not plan.pipeline:
        return {"outcome": "resolution_failed", "resolution": {"error": engine.NOTHING_TO_QUERY}, "rows": []}
    data = plan.to_json()
    data["person_field"] = plan.person_field
    return {"plan": data, "error": None}


def validate_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    if state.get("error"):
        return {"attempts": [{"plan": state["plan"], "error": state["error"]}]}
    settings, _, _, ctx, _ = _planning_context(state, runtime)
    error = engine.validate(_plan(state), ctx, settings)
    if error:
        return {"error": error, "attempts": [{"plan": state["plan"], "error": error}]}
    return {"error": None}


def execute_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    settings, catalog, _, ctx, _ = _planning_context(state, runtime)
    plan = _plan(state)
    try:
        rows = engine.execute(plan, ctx, store_for(settings), settings, catalog.tenant)
    except engine.ExecutionError as exc:
        return {"error": str(exc), "rows": [], "attempts": [{"plan": state["plan"], "error": str(exc)}]}
    return {"rows": rows, "error": None, "outcome": "success" if rows else "no_results",
            "attempts": [{"plan": state["plan"], "error": None}]}


def _plan(state: StructuredState) -> Plan:
    data = state["plan"]
    return Plan(collection=data["collection"], pipeline=data["pipeline"], confidence=data.get("confidence", 1.0),
                planner=data.get("planner", "offline"), notes=data.get("notes", []),
                person_field=tuple(data["person_field"]) if data.get("person_field") else None)


def after_check(state: StructuredState, runtime: Runtime[Context]) -> str:
    """The retry edge: back to planning while attempts remain and a planner can correct itself."""
    if not state.get("error"):
        return "continue"
    settings = context_settings(runtime)
    attempts = len(state.get("attempts", []))
    if attempts < settings.max_attempts and llm_planner_for(settings) is not None:
        return "retry"
    return "give_up"


def give_up(state: StructuredState) -> dict[str, Any]:
    return {"outcome": "max_attempts", "rows": []}

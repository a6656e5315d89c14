"""The respond node: turn the structured outcome into a cited answer and the list of queries run."""

from __future__ import annotations

from typing import Any

from context_engine.graph.state import State
from context_engine.query.answer import compose
from context_engine.query.engine import MaxAttempts, NoResults, ResolutionFailed, Success, describe_attempts
from context_engine.query.plan import Attempt, Plan


def _attempts(state: State) -> list[Attempt]:
    return [Attempt(Plan(a["plan"]["collection"], a["plan"]["pipeline"], planner=a["plan"].get("planner", "offline")),
                    a["error"]) for a in state.get("attempts", [])]


def respond(state: State) -> dict[str, Any]:
    attempts = _attempts(state)
    outcome = state.get("outcome", "max_attempts")
    collection = attempts[-1].plan.collection if attempts else None
    if outcome == "resolution_failed":
        result = ResolutionFailed(state.get("resolution", {}).get("error", "could not resolve the question"))
    elif outcome == "success":
        result = Success(attempts[-1].plan, state.get("rows", []), attempts)
    elif outcome == "no_results":
        result = NoResults(attempts[-1].plan, attempts, tried=describe_attempts(attempts))
    else:
        result = MaxAttempts(attempts)
    answer, citations = compose(result, collection)
    queries = []
    if attempts:
        final = attempts[-1]
        queries.append({"collection": final.plan.collection, "pipeline": final.plan.pipeline,
                        "attempts": [{"pipeline": a.plan.pipeline, "error": a.error} for a in attempts],
                        "row_count": len(state.get("rows", [])) if outcome == "success" else 0})
    return {"answer": answer, "citations": citations, "queries": queries, "route": "structured",
            "records": state.get("rows", []) if outcome == "success" else []}

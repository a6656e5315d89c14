"""The reflect node: is the answer grounded? If not, retry retrieval with a rewritten, wider query (bounded)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from langgraph.runtime import Runtime

from context_engine.answering.reflect import reflect as check_answer
from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.query.engine import NOTHING_TO_QUERY
from context_engine.runtime import chat_model_for


def _cited_texts(state: State) -> list[str]:
    """The text behind each citation, in citation order: `[n]` in the answer is checked against the nth."""
    texts: dict[str, str] = {}
    for hit in [*state.get("fused", []), *state.get("contexts", [])]:  # a source is its whole chunk
        texts.setdefault(hit["doc_ref"], hit.get("text", ""))
    return [texts.get(c.get("id"), c.get("title") or "") for c in state.get("citations", [])]


def _question_without_resolved_times(state: State) -> str:
    """Time expressions were applied as filters by the structured half; no passage has to repeat them."""
    question = state["question"]
    for when in state.get("resolution", {}).get("times", []):
        question = question.replace(when.get("text", ""), " ")
    return question


def reflect(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    rounds = state.get("reflections", 0)
    route = state.get("route", "structured")
    if route == "structured":
        nothing_to_query = state.get("resolution", {}).get("error") == NOTHING_TO_QUERY
        if nothing_to_query and rounds < settings.max_reflections:
            # The question named no records, people or times: it is about content, so search for it.
            return {"reflection": {"grounded": False, "action": "retry", "retry": True,
                                   "reasons": ["nothing structured to query: searching the content instead"]},
                    "route": "semantic", "reflections": rounds + 1}
        return {"reflection": {"grounded": True, "action": "accept", "retry": False,
                               "reasons": ["structured numbers exactly as queried"]}}
    if state.get("declined"):
        return {"reflection": {"grounded": True, "action": "decline", "retry": False,
                               "reasons": ["nothing retrieved answers the question"]}}
    verdict = check_answer(_question_without_resolved_times(state), state.get("claims", ""), state.get("citations", []),
                           _cited_texts(state), llm=chat_model_for(settings),
                           attempts_left=settings.max_reflections - rounds)
    retry = verdict.action == "retry" and rounds < settings.max_reflections
    update: dict[str, Any] = {"reflection": {**asdict(verdict), "retry": retry}}
    if retry:
        update.update(reflections=rounds + 1, search_query=verdict.rewritten_query or state["question"])
    return update


def after_reflect(state: State) -> str:
    return "retry" if state.get("reflection", {}).get("retry") else "done"

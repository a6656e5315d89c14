"""The structured half as a subgraph: resolve -> generate_query -> validate_query -> execute_query,
with the retry edge back to generate_query, and when the model's plans all failed, `fall_back` to the
offline plan it was given. This is the one structured loop: the main graph runs it as
a node, and `run_structured` (library, tests, evaluation) invokes the same compiled subgraph.

Resolution runs once: the main graph's router resolves people and times and hands them over in
`resolution`; the subgraph resolves only when invoked alone. Later nodes rebuild the planning
context from that JSON (`PlanningContext.from_resolution`), never by resolving again.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from context_engine.assistant.context import Context, LibraryContext, context_of
from context_engine.assistant.state import StructuredState
from context_engine.chat_models import is_down, watched
from context_engine.config import Settings
from context_engine.query import engine
from context_engine.query.engine import MaxAttempts, NoResults, ResolutionFailed, RunResult, Success
from context_engine.query.execute import ExecutionError
from context_engine.query.identity import Person
from context_engine.query.ir import to_extended_json
from context_engine.query.plan import Attempt, Plan, PlanningContext
from context_engine.query.planner.templates import context_set_for
from context_engine.resources import asker_for, catalog_for, llm_planner_for, store_for, value_index_for
from context_engine.store.expressions import finite_for_json
from context_engine.text import as_asked, parse_now, simplified

__all__ = [
    "build_structured_graph",
    "planning_context",
    "resolve_once",
    "run_result",
    "run_structured",
    "structured_graph",
]


def planner_of(context: Context, settings: Settings):
    """The planner that corrects failed attempts: the run's own, else the LLM planner, else none."""
    return context.planner or llm_planner_for(settings)


def resolve_once(question: str, now: datetime, settings: Settings) -> dict[str, Any]:
    """Resolve the people and times of a question: the resolution JSON, or its error and candidates."""
    catalog = catalog_for(settings)
    ctx, failed = engine.resolve(question, now, catalog, asker_for(settings, catalog), values=value_index_for(settings))
    if failed is not None:
        return {
            "error": failed.message,
            "candidates": [p.to_json() for p in failed.candidates],
            "unresolved": failed.unresolved,
        }
    return ctx.resolution_json()


def planning_context(state: StructuredState, settings: Settings) -> PlanningContext:
    catalog = catalog_for(settings)
    ctx = PlanningContext.from_resolution(
        state.get("resolution") or {},
        state["question"],
        parse_now(state.get("now")),
        catalog.schemas,
        catalog.directory,
        asker_for(settings, catalog),
    )
    ctx.context_set = context_set_for(settings, catalog.schemas)
    ctx.previous = [Attempt.from_json(a) for a in state.get("attempts", []) if a.get("error")]
    return ctx


def resolve(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    update: dict[str, Any] = {"attempts": [], "error": "", "rows": [], "total": 0, "outcome": ""}
    resolution = state.get("resolution")
    if not resolution:  # invoked alone, not after the router: resolve here, once
        settings = context_of(runtime).settings()
        resolution = resolve_once(state["question"], parse_now(state.get("now")), settings)
        update["resolution"] = resolution
    if resolution.get("error"):
        update["outcome"] = "resolution_failed"
    return update


@watched
def generate_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    context = context_of(runtime)
    settings = context.settings()
    ctx = planning_context(state, settings)
    # The router's offline plan of this very question: not built again (a retry has its own reasons).
    draft = Plan.from_json(state["draft"]) if state.get("draft") and not ctx.previous else None
    planner = planner_of(context, settings)
    if is_down(getattr(planner, "model", None)):  # unreachable earlier this run: the offline planner corrects
        planner = None
    try:
        values = value_index_for(settings)
        plan = engine.plan(
            ctx,
            planner,
            always_llm=context.always_llm,
            offline=draft,
            declines=lambda offline: engine.refused_names(offline, ctx, values) is not None,
        )
    except Exception as exc:  # noqa: BLE001 - an unparseable model answer is a failed attempt, fed back next time
        failed = Attempt(Plan("?", [], planner="llm"), f"planner error: {exc}")
        return {
            "plan": failed.plan.to_json(),
            "error": failed.error,
            "attempts": [*state.get("attempts", []), failed.to_json()],
        }
    if not plan.pipeline:
        return {"outcome": "resolution_failed", "resolution": {"error": engine.NOTHING_TO_QUERY}, "rows": []}
    update = _planned(plan, ctx, settings)
    if plan.planner == "llm" and ctx.draft is not None and ctx.draft.pipeline and not ctx.previous:
        update["draft"] = ctx.draft.to_json()  # kept for `fall_back`, should the model's plans all fail
    return update


def _planned(plan: Plan, ctx: PlanningContext, settings: Settings) -> dict[str, Any]:
    """The state update of a plan to validate, or of its refusal: a name no one has, conditions that
    cannot hold together."""
    values = value_index_for(settings)
    # A name nobody has (or a value of a kind no record holds), read so by the offline draft, is declined whoever planned: a model's plan would
    # only guess a value for it ("assignee.login": "诸葛明轩") and answer 0 or nothing.
    unread = ctx.draft if plan.planner != "offline" and ctx.draft is not None else plan
    refused = engine.refused_names(unread, ctx, values) or engine.contradiction(plan, ctx)
    if refused is not None:
        return {
            "outcome": "resolution_failed",
            "rows": [],
            "plan": plan.to_json(),
            "resolution": {
                "error": refused.message,
                "candidates": [p.to_json() for p in refused.candidates],
                "unresolved": refused.unresolved,
            },
        }
    return {
        "plan": plan.to_json(),
        "error": "",
        "understood": plan.understood,
        "not_understood": plan.not_understood,
        "confidence": plan.confidence,
    }


def fall_back(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Every plan the model wrote failed: the offline plan it was asked to improve is the answer's plan,
    checked like any other, saying the words it did not read (a model failure must not lose the
    offline answer, as when the model cannot be reached)."""
    settings = context_of(runtime).settings()
    plan = Plan.from_json(state["draft"])
    plan.notes.append("the model's plans failed; kept the offline plan")
    return _planned(plan, planning_context(state, settings), settings)


def validate_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    if state.get("error"):  # the planner failed: its attempt is already recorded
        return {}
    settings = context_of(runtime).settings()
    error = engine.validate(Plan.from_json(state["plan"]), planning_context(state, settings), settings)
    if error:
        return {"error": error, "attempts": [*state.get("attempts", []), {"plan": state["plan"], "error": error}]}
    return {}


def execute_query(state: StructuredState, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_of(runtime).settings()
    ctx = planning_context(state, settings)
    plan_json = state["plan"]
    plan = Plan.from_json(plan_json)
    attempts = state.get("attempts", [])
    nested = plan.ir.nested if plan.ir is not None else None
    if nested is not None and not nested.bound:
        # A question whose one answer feeds the next: the inner step runs first (its own traced run), its
        # top result fills the outer plan, which is validated like any plan before it runs.
        def first_step(query: dict[str, Any]) -> Plan:
            return engine.run_inner(plan, ctx, store_for(settings), settings, settings.tenant)

        try:
            said = to_extended_json(engine.inner_pipeline(plan, ctx, settings))
            plan = RunnableLambda(first_step, name="mongodb_aggregate").invoke(
                {"collection": nested.inner.collection, "pipeline": said, "step": "first"}
            )
        except ExecutionError as exc:
            return {"error": str(exc), "rows": [], "attempts": [*attempts, {"plan": plan_json, "error": str(exc)}]}
        bound = plan.to_json()
        if plan.ir is None or plan.ir.nested is None or plan.ir.nested.value is None:  # nothing to feed the next step
            done = {"plan": bound, "error": None}
            return {"plan": bound, "rows": [], "error": "", "outcome": "no_results", "attempts": [*attempts, done]}
        error = engine.validate(plan, ctx, settings)
        if error:
            return {"error": error, "rows": [], "attempts": [*attempts, {"plan": bound, "error": error}]}
        plan_json = bound

    def aggregate(query: dict[str, Any]) -> list[dict[str, Any]]:
        return engine.execute(plan, ctx, store_for(settings), settings, settings.tenant)

    try:
        # Its own run in traces (astream_events, LangSmith): the collection and the pipeline as run.
        rows = RunnableLambda(aggregate, name="mongodb_aggregate").invoke(
            {"collection": plan.collection, "pipeline": plan_json["pipeline"]}
        )
    except ExecutionError as exc:
        return {"error": str(exc), "rows": [], "attempts": [*attempts, {"plan": plan_json, "error": str(exc)}]}
    update: dict[str, Any] = {"plan": plan_json} if nested is not None else {}  # the plan as bound
    if not rows or rows == [{"count": 0}]:
        try:
            unread = engine.unmatched_topic(plan, ctx, store_for(settings), settings, settings.tenant)
        except ExecutionError:  # the check ran out of time: it claims nothing, the answer stands
            unread = None
        refused = engine.unmatched_name(unread, ctx, value_index_for(settings)) if unread else None
        if refused is not None:
            return {
                "outcome": "resolution_failed",
                "rows": [],
                "attempts": [*attempts, {"plan": plan_json, "error": None}],
                "resolution": {
                    "error": refused.message,
                    "candidates": [p.to_json() for p in refused.candidates],
                    "unresolved": refused.unresolved,
                },
            }
        if unread and unread not in plan.not_understood:
            plan.not_understood = [*plan.not_understood, unread]
            update = {"plan": plan.to_json(), "not_understood": plan.not_understood}
    final = update.get("plan", plan_json)
    try:
        total = engine.total_of(plan, rows, ctx, store_for(settings), settings, settings.tenant)
    except ExecutionError:  # the count ran out of time: the list stands, its total unsaid
        total = None
    return {
        "rows": jsonable(rows),
        "total": total or 0,
        "error": "",
        "outcome": "success" if rows else "no_results",
        "attempts": [*attempts, {"plan": final, "error": None}],
        **update,
    }


def jsonable(value: Any) -> Any:
    """Rows as JSON: dates as ISO strings, non-finite doubles as MongoDB prints them."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return finite_for_json(value)  # "Infinity", "-Infinity", "NaN": a JSON encoder would write no JSON
    return value


def after_check(state: StructuredState, runtime: Runtime[Context]) -> str:
    """The retry edge: back to planning while attempts remain and a planner can correct itself."""
    if state.get("outcome") == "resolution_failed":
        return "failed"
    if not state.get("error"):
        return "continue"
    context = context_of(runtime)
    settings = context.settings()
    attempts = state.get("attempts", [])
    if len(attempts) < settings.max_attempts and planner_of(context, settings):
        return "retry"
    if (state.get("draft") or {}).get("pipeline") and all(a["plan"].get("planner") == "llm" for a in attempts):
        return "fall_back"
    return "give_up"


def give_up(state: StructuredState) -> dict[str, Any]:
    return {"outcome": "max_attempts", "rows": []}


def build_structured_graph():
    builder = StateGraph(StructuredState, context_schema=Context)
    builder.add_node("resolve", resolve)
    builder.add_node("generate_query", generate_query)
    builder.add_node("validate_query", validate_query)
    builder.add_node("execute_query", execute_query)
    builder.add_node("fall_back", fall_back)
    builder.add_node("give_up", give_up)
    builder.add_edge(START, "resolve")
    builder.add_conditional_edges("resolve", after_check, {"continue": "generate_query", "failed": END})
    ends: dict[Hashable, str] = {
        "retry": "generate_query",
        "fall_back": "fall_back",
        "give_up": "give_up",
        "failed": END,
    }
    builder.add_conditional_edges("generate_query", after_check, {"continue": "validate_query", **ends})
    builder.add_conditional_edges("fall_back", after_check, {"continue": "validate_query", **ends})
    builder.add_conditional_edges("validate_query", after_check, {"continue": "execute_query", **ends})
    builder.add_conditional_edges("execute_query", after_check, {"continue": END, **ends})
    builder.add_edge("give_up", END)
    compiled = builder.compile()
    compiled.name = "structured_query"
    return compiled


structured_graph = build_structured_graph()


def run_result(state: StructuredState) -> RunResult:
    """The subgraph's final state as the tagged union every caller reads."""
    attempts = [Attempt.from_json(a) for a in state.get("attempts", [])]
    outcome = state.get("outcome") or "max_attempts"
    resolution = state.get("resolution") or {}
    if outcome == "resolution_failed":
        candidates = [
            Person(key=c["key"], name=c["name"], handles={k: v for k, v in c.items() if k not in ("key", "name")})
            for c in resolution.get("candidates", [])
        ]
        return ResolutionFailed(
            resolution.get("error", "could not resolve the question"),
            candidates=candidates,
            attempts=attempts,
            unresolved=resolution.get("unresolved", ""),
        )
    if outcome == "success":
        return Success(attempts[-1].plan, state.get("rows", []), attempts, total=state.get("total") or None)
    if outcome == "no_results":
        return NoResults(attempts[-1].plan, attempts, tried=engine.describe_attempts(attempts))
    return MaxAttempts(attempts)


def run_structured(
    question: str,
    settings: Settings,
    *,
    now: datetime | str | None = None,
    planner: Any = None,
    always_llm: bool = False,
) -> RunResult:
    """Answer a structured question with the production subgraph; `settings` fix tenant, asker and data.
    `planner` (an object with `.plan(ctx)`) stands in for the LLM planner."""
    context = LibraryContext(base_settings=settings, planner=planner, always_llm=always_llm)
    when = now.isoformat() if isinstance(now, datetime) else (now or "")
    state = structured_graph.invoke({"question": simplified(question), "now": when}, context=context)
    result = run_result(state)
    if isinstance(result, ResolutionFailed):  # the words it could not resolve, as the asker wrote them
        result.message, result.unresolved = as_asked(result.message, question), as_asked(result.unresolved, question)
    return result

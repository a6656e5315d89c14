"""The structured half as plain Python: resolve -> plan -> validate -> execute, with retries.

Each step is a function the graph's nodes call; `run_structured` chains them for library use and
tests. The result is a tagged union carrying every attempt: `Success`, `NoResults`,
`MaxAttempts`, `ResolutionFailed`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Union

from context_engine.config import Settings
from context_engine.query.catalog import Catalog
from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.identity import PeopleDirectory, Person
from context_engine.query.offline import CONFIDENT, OfflinePlanner
from context_engine.query.plan import Attempt, Plan, PlanningContext
from context_engine.query.timeexpr import find_time_ranges
from context_engine.query.validate import ValidationPolicy, validate_pipeline


@dataclass
class Success:
    plan: Plan
    rows: list[dict[str, Any]]
    attempts: list[Attempt]
    kind: Literal["success"] = "success"


@dataclass
class NoResults:
    plan: Plan
    attempts: list[Attempt]
    tried: str
    kind: Literal["no_results"] = "no_results"
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class MaxAttempts:
    attempts: list[Attempt]
    kind: Literal["max_attempts"] = "max_attempts"
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ResolutionFailed:
    message: str
    candidates: list[Person] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    kind: Literal["resolution_failed"] = "resolution_failed"
    rows: list[dict[str, Any]] = field(default_factory=list)


RunResult = Union[Success, NoResults, MaxAttempts, ResolutionFailed]

NOTHING_TO_QUERY = ("I could not find anything to query in the question: name what to look for "
                    "(PRs, issues, messages, documents), who, when or a topic.")


_FIRST_PERSON_FILTER = re.compile(
    r"\bmy\s+(?:\w+\s+){0,2}(?:prs?|pull requests?|issues?|tickets?|bugs?|reviews?|messages?|threads?|commits?|docs?|"
    r"documents?|work|queue|tasks?)\b|\b(?:to|by|for|from|assigned|requested|mention(?:ing|s)?)\s+me\b|"
    r"\bI\s+(?:have\s+|had\s+|did\s+)?(?:merged?|opened|open|reviewed?|wrote|write|created?|filed?|reported?|approved?|"
    r"closed?|resolved?|posted?|shipped?|committed|authored|own|am assigned)\b|\bdid I\b|\bhave I\b|"
    r"我的|我(?:上周|本周|这周|今年|去年|最近)?(?:合并|提交|创建|负责|写|发|评审|审查|关闭|解决|完成)|给我|分配给我|需要我|我手上|我名下",
    re.I)


def principals_of(person: Person | None) -> list[str]:
    """Access-list entries that grant this asker: the principals of the one account group the asker
    was matched to (`PeopleDirectory.asker`), never the union of a display person's accounts (which
    names join) and never a display name or handle. A person found in a question holds none."""
    if person is None:
        return []
    return list(person.principals)


def resolve(question: str, now: datetime, catalog: Catalog, asker: Person | None,
            tiebreak=None) -> tuple[PlanningContext | None, ResolutionFailed | None]:
    """People, time and the planning context; an unbroken tie is a resolution failure."""
    directory = catalog.directory
    # Stored values ("bug", "payments") are not people; people's own names stored as values are.
    reserved = frozenset(v.lower() for s in catalog.schemas.values() for f in s.fields.values()
                         for v in (f.enum or []) if isinstance(v, str)) - set(directory.index)
    mentions = directory.find_mentions(question, asker, reserved=reserved)
    if asker is None and any(m.is_asker for m in mentions):
        # "where do I find the ADRs" needs no asker; "my open PRs" does.
        if _FIRST_PERSON_FILTER.search(question):
            text = next(m.text for m in mentions if m.is_asker)
            return None, ResolutionFailed(f"{text!r} refers to the asker, but no asker is set (use --as)")
        mentions = [m for m in mentions if not m.is_asker]
    for mention in mentions:
        if mention.ambiguous:
            chosen = tiebreak(question, mention) if tiebreak else None
            if chosen is None:
                names = ", ".join(f"{p.name} ({p.key})" for p in mention.candidates)
                return None, ResolutionFailed(f"{mention.text!r} is ambiguous: {names}; which one did you mean?",
                                              candidates=mention.candidates)
            mention.person, mention.candidates = chosen, []
    ctx = PlanningContext(question=question, now=now, schemas=catalog.schemas, directory=directory,
                          asker=asker, mentions=[m for m in mentions if m.person is not None],
                          times=find_time_ranges(question, now))
    return ctx, None


def plan(ctx: PlanningContext, llm_planner=None, always_llm: bool = False, offline: Plan | None = None) -> Plan:
    """Offline first; the LLM when the offline plan is not confident or an attempt failed.

    `always_llm` sends every question to the model (to measure the LLM planner on its own). `offline`
    is the question's offline plan when the router already built it: it is built once per question."""
    if offline is not None:
        ctx.draft = offline
    if llm_planner is not None and (ctx.previous or always_llm):
        return llm_planner.plan(ctx)
    offline = ctx.draft = offline or OfflinePlanner().plan(ctx)
    if offline.confidence < CONFIDENT and llm_planner is not None:
        try:
            return llm_planner.plan(ctx)
        except Exception as exc:  # a model failure must not lose the offline answer
            offline.notes.append(f"LLM planner failed ({exc.__class__.__name__}); kept the offline plan")
    return offline


def validate(plan_: Plan, ctx: PlanningContext, settings: Settings) -> str | None:
    schema = ctx.schemas.get(plan_.collection)
    if schema is None:
        return (f"Collection {plan_.collection!r} does not exist or is empty; "
                f"use one of: {', '.join(sorted(ctx.schemas))}.")
    errors = validate_pipeline(plan_.pipeline, schema, ValidationPolicy(
        allow_regex=settings.allow_regex, max_limit=settings.max_rows))
    return "; ".join(errors) if errors else None


def execute(plan_: Plan, ctx: PlanningContext, store: Any, settings: Settings, tenant: str) -> list[dict[str, Any]]:
    rows = run_pipeline(store, plan_.collection, plan_.pipeline, tenant=tenant,
                        principals=principals_of(ctx.asker), schema=ctx.schemas.get(plan_.collection),
                        max_rows=settings.max_rows, max_time_ms=settings.max_time_ms)
    return with_display_names(rows, plan_, ctx.directory)


def with_display_names(rows: list[dict[str, Any]], plan_: Plan, directory: PeopleDirectory) -> list[dict[str, Any]]:
    """An aggregate over people carries the person's display name beside the login/id."""
    if not plan_.person_field:
        return rows
    _, kind = plan_.person_field
    by_handle = {p.handle(kind): p for p in directory.people if p.handle(kind)}
    for row in rows:
        person = by_handle.get(row.get("_id"))
        if person is not None:
            row["name"] = person.name
    return rows


def describe_attempts(attempts: list[Attempt]) -> str:
    return " | ".join(f"{a.plan.collection} {a.plan.pipeline}" for a in attempts)


def run_structured(question: str, *, store: Any, catalog: Catalog, settings: Settings, now: datetime,
                   asker: Person | None, llm_planner=None, tiebreak=None, always_llm: bool = False) -> RunResult:
    ctx, failed = resolve(question, now, catalog, asker, tiebreak)
    if failed:
        return failed
    assert ctx is not None
    attempts: list[Attempt] = []
    for _ in range(settings.max_attempts):
        try:
            current = plan(ctx, llm_planner, always_llm)
        except Exception as exc:  # the model's output could not be parsed into a plan
            attempts.append(Attempt(Plan("?", [], planner="llm"), f"planner error: {exc}"))
            ctx.previous = attempts
            continue
        if not current.pipeline:
            return ResolutionFailed(NOTHING_TO_QUERY, attempts=attempts)
        error = validate(current, ctx, settings)
        if error is None:
            try:
                rows = execute(current, ctx, store, settings, catalog.tenant)
            except ExecutionError as exc:
                error = str(exc)
        attempts.append(Attempt(current, error))
        if error is None:
            if rows:
                return Success(current, rows, attempts)
            return NoResults(current, attempts, tried=describe_attempts(attempts))
        ctx.previous = attempts
        if llm_planner is None:
            break  # the offline planner is deterministic: asking again gives the same plan
    return MaxAttempts(attempts)

"""The LLM planner: any LangChain chat model writes the pipeline, given what code already knows.

The prompt carries the relevant schemas, now, the asker, the people and time ranges already
resolved by code, and context-set examples that validate against this tenant's schema. The model's
JSON is parsed into a `Plan`; Extended-JSON dates (`{"$date": ...}`) become datetimes. The plan is
untrusted: it goes through the same validator as any other.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from context_engine.prompts import PLANNER_RETRY, PLANNER_SYSTEM, TIEBREAK_SYSTEM
from context_engine.query.fields import PEOPLE_ROLES
from context_engine.query.context_sets import shipped_examples
from context_engine.query.identity import Mention, Person
from context_engine.query.offline import OfflinePlanner, detect_collection
from context_engine.query.plan import Plan, PlanningContext, from_extended_json, to_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import validate_pipeline
from context_engine.models import structured_output



class PlanOutput(BaseModel):
    collection: str = Field(description="the collection to query")
    pipeline: list[dict[str, Any]] = Field(description="the MongoDB aggregation pipeline")


class TiebreakOutput(BaseModel):
    key: str


@lru_cache(maxsize=1)
def context_sets() -> dict[str, Any]:
    """The shipped templates as solved examples (each bound to its example question's values)."""
    return {"templates": shipped_examples()}


def _relevant(ctx: PlanningContext) -> list[CollectionSchema]:
    """The collection the question names, when it names one: a short prompt is a better prompt."""
    named, _ = detect_collection(ctx.question, ctx.schemas)
    return [ctx.schemas[named]] if named else list(ctx.schemas.values())


def _describe_person(person: Person, schemas: list[CollectionSchema]) -> str:
    """The exact value to write for this person in each people field of the relevant collections."""
    uses = []
    for schema in schemas:
        for options in PEOPLE_ROLES.get(schema.name, {}).values():
            for path, kind in options:
                if schema.has_path(path) and person.handle(kind):
                    uses.append(f"{schema.name}.{path} = {person.handle(kind)!r}")
    return f"{person.name} (write: " + "; ".join(dict.fromkeys(uses)) + ")"


def _describe_time(rng) -> str:
    cond = {}
    if rng.start is not None:
        cond["$gte"] = {"$date": rng.start.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if rng.end is not None:
        cond["$lt"] = {"$date": rng.end.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return f"- {rng.text!r} -> {json.dumps(cond)}"


def _examples(ctx: PlanningContext, schemas: list[CollectionSchema]) -> str:
    shown = []
    names = {s.name for s in schemas}
    for example in context_sets()["templates"]:
        schema = ctx.schemas.get(example["collection"])
        if schema is None or example["collection"] not in names:
            continue
        # Only examples valid for this tenant's schema: a Jira-shaped example misleads on GitHub issues.
        if validate_pipeline(from_extended_json(example["pipeline"]), schema):
            continue
        shown.append(f"Q: {example['question']}\n" + json.dumps(
            {"collection": example["collection"], "pipeline": example["pipeline"]}, ensure_ascii=False))
    return "\n".join(shown[:5]) or "(none)"


def build_messages(ctx: PlanningContext, max_rows: int = 200) -> list[tuple[str, str]]:
    schemas = _relevant(ctx)
    asker = (f"The asker (\"I\", \"me\", \"my\") is {_describe_person(ctx.asker, schemas)}" if ctx.asker
             else "The asker is unknown.")
    people = "\n".join(f"- {m.text!r} -> {_describe_person(m.person, schemas)}" for m in ctx.mentions if m.person) or "(none)"
    times = "\n".join(_describe_time(t) for t in ctx.times) or "(none)"
    draft = OfflinePlanner().plan(ctx)
    system = PLANNER_SYSTEM.format(
        max_rows=max_rows, now=ctx.now.strftime("%Y-%m-%dT%H:%M:%SZ"), asker=asker, schemas="\n".join(sc.describe(max_enum=15, for_prompt=True) for sc in schemas),
        people=people, times=times, examples=_examples(ctx, schemas),
        draft=json.dumps({"collection": draft.collection, "pipeline": to_extended_json(draft.pipeline)}, ensure_ascii=False),
        draft_notes="; ".join(draft.notes) or "none")
    messages = [("system", system), ("human", ctx.question)]
    for attempt in ctx.previous[-2:]:
        messages.append(("ai", json.dumps({"collection": attempt.plan.collection,
                                           "pipeline": to_extended_json(attempt.plan.pipeline)}, ensure_ascii=False)))
        messages.append(("human", PLANNER_RETRY.format(attempt="(above)", error=attempt.error)))
    return messages


def link_people(pipeline: Any, collection: str, ctx: PlanningContext) -> Any:
    """Code corrects the model: a person written by name in a people field becomes that field's handle.

    Small models write "Alex Chen" into `user.login` even when told the login; the directory knows it.
    """
    kinds = {path: kind for options in PEOPLE_ROLES.get(collection, {}).values() for path, kind in options}

    def fix(value: Any, kind: str) -> Any:
        if isinstance(value, str):
            try:
                person = ctx.directory.lookup(value)
            except LookupError:
                return value
            return person.handle(kind) or value
        if isinstance(value, list):
            return [fix(v, kind) for v in value]
        if isinstance(value, dict):
            return {k: fix(v, kind) if k in ("$eq", "$ne", "$in", "$nin", "$all") else v for k, v in value.items()}
        return value

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if isinstance(node, dict):
            return {k: fix(v, kinds[k]) if k in kinds else walk(v) for k, v in node.items()}
        return node

    return [{name: walk(body) if name == "$match" else body for name, body in stage.items()}
            if isinstance(stage, dict) else stage for stage in pipeline] if isinstance(pipeline, list) else pipeline


class LLMPlanner:
    name = "llm"

    def __init__(self, model: Any, max_rows: int = 200):
        self.max_rows = max_rows
        self.runnable = structured_output(model, PlanOutput).with_retry(stop_after_attempt=2)
        self.tiebreaker = structured_output(model, TiebreakOutput)

    def plan(self, ctx: PlanningContext) -> Plan:
        out: PlanOutput = self.runnable.invoke(build_messages(ctx, self.max_rows))
        pipeline = link_people(from_extended_json(out.pipeline), out.collection, ctx)
        return Plan(collection=out.collection, pipeline=pipeline, confidence=0.8,
                    planner="llm", notes=["written by the LLM planner"])

    def tiebreak(self, question: str, mention: Mention) -> Person | None:
        candidates = "\n".join(f"- key={p.key!r}: {p.name} (team {p.team})" for p in mention.candidates)
        try:
            out: TiebreakOutput = self.tiebreaker.invoke(
                [("system", TIEBREAK_SYSTEM.format(candidates=candidates)), ("human", question)])
        except Exception:  # an unusable answer is no answer: the user is asked instead
            return None
        return next((p for p in mention.candidates if p.key == out.key), None)

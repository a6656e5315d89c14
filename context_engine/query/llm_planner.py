"""The LLM planner: any LangChain chat model writes the plan IR (`query/ir.py`) as JSON, given what
code already knows; `query/compile.py` turns it into the pipeline.

The prompt is sized to the question: the schema of the collection the question names (only the
fields its words or the planner's roles touch), the people and time ranges already resolved by code,
the offline planner's draft IR and the words that draft did not understand, and at most three
examples. Models that take a JSON schema for their output (OpenAI-compatible servers) are given
`PLAN_JSON_SCHEMA`; any other chat model is asked for the JSON text, parsed the same way. The plan
is untrusted: its IR is checked as it is read, and its pipeline goes through the validator.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from langchain_core.runnables import RunnableLambda

from context_engine.prompts import PLANNER_RETRY, PLANNER_SYSTEM, TIEBREAK_SYSTEM
from context_engine.query.compile import compile_plan, resolve_field
from context_engine.query.context_sets import shipped_examples
from context_engine.query.fields import PEOPLE_ROLES, VALUE_ROLES
from context_engine.query.identity import Mention, Person
from context_engine.query.ir import PLAN_JSON_SCHEMA, IRError, PlanIR
from context_engine.query.offline import OfflinePlanner, detect_collection
from context_engine.query.plan import Plan, PlanningContext, from_extended_json, to_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import validate_pipeline

EXAMPLES = 3


@lru_cache(maxsize=1)
def context_sets() -> dict[str, Any]:
    """The shipped templates as solved examples (each bound to its example question's values)."""
    return {"templates": shipped_examples()}


def _relevant(ctx: PlanningContext, draft: Plan) -> list[CollectionSchema]:
    """The collection the question names, else the one the draft guessed: a short prompt is a better
    prompt, and a faster one (the other collections are listed by name)."""
    named, _ = detect_collection(ctx.question, ctx.schemas)
    chosen = named or (draft.collection if draft.collection in ctx.schemas else None)
    return [ctx.schemas[chosen]] if chosen else list(ctx.schemas.values())


def _describe_person(person: Person, schemas: list[CollectionSchema]) -> str:
    """The exact value to write for this person in the people fields of the relevant collections, one
    line per handle kind ("Rashid Khan: 'rsh-dev' in user.login, reviews.user.login ...")."""
    fields: dict[str, list[str]] = {}
    for schema in schemas:
        for options in PEOPLE_ROLES.get(schema.name, {}).values():
            for path, kind in options:
                if schema.has_path(path) and person.handle(kind):
                    fields.setdefault(person.handle(kind), []).append(path if len(schemas) == 1 else f"{schema.name}.{path}")
    return f"{person.name}: " + "; ".join(f"{handle!r} in {', '.join(dict.fromkeys(paths))}"
                                          for handle, paths in fields.items())


def _describe_time(rng) -> str:
    cond = {}
    if rng.start is not None:
        cond["$gte"] = {"$date": rng.start.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if rng.end is not None:
        cond["$lt"] = {"$date": rng.end.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return f"- {rng.text!r} -> {json.dumps(cond)}"


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff]", text)}


def _examples(ctx: PlanningContext, schemas: list[CollectionSchema]) -> str:
    """At most `EXAMPLES` context-set examples, those sharing most words with the question, valid for
    this tenant's schema (a Jira-shaped example misleads on GitHub issues)."""
    names = {sc.name for sc in schemas}
    asked = _words(ctx.question)
    valid = [e for e in context_sets()["templates"] if e["collection"] in names
             and not validate_pipeline(from_extended_json(e["pipeline"]), ctx.schemas[e["collection"]])]
    # Only examples near the question (two words in common): every example costs the model time to read.
    near = sorted((e for e in valid if len(asked & _words(e["question"])) >= 2),
                  key=lambda e: -len(asked & _words(e["question"])))
    return "\n".join(f"Q: {e['question']}\n" + json.dumps({"collection": e["collection"], "pipeline": e["pipeline"]},
                                                        ensure_ascii=False) for e in near[:EXAMPLES]) or "(none)"


def schema_slice(schema: CollectionSchema, question: str, max_enum: int = 15, also: frozenset[str] = frozenset()) -> str:
    """The fields a plan for this question may need: those the planners' roles name, those whose name
    shares a word with the question, those holding a value the question names, those the draft uses
    (`also`). A short prompt is a
    better prompt for a small model, and a faster one."""
    asked = _words(question)
    low = question.lower()
    people = {p for options in PEOPLE_ROLES.get(schema.name, {}).values() for p, _ in options}
    roles = {p for paths in VALUE_ROLES.get(schema.name, {}).values() for p in paths} | people | {"ref"} | also
    keep = []
    for path, info in schema.fields.items():
        if "object" in info.types and len(info.types) <= 2:
            continue  # its subfields are listed
        named = bool(asked & _words(path.replace("_", " ").replace(".", " ")))
        valued = any(isinstance(v, str) and len(v) >= 2 and v.lower() in low for v in info.enum or [])
        if path in roles or named or valued:
            kind = "|".join(sorted(info.types - {"null"})) or "null"
            extra = " (in array)" if info.in_array else ""
            # People fields take the handles given under "People"; other values matter when named.
            shown = 0 if path in people else max_enum if (named or valued) else 6 if len(info.enum or []) <= 6 else 0
            if info.enum and shown:
                extra += " one of: " + ", ".join(repr(v) for v in info.enum[:shown]) + (
                    " ..." if len(info.enum) > shown else "")
            keep.append(f"  {path}: {kind}{extra}")
    roles_line = ", ".join(f"{role}={paths[0]}" for role, paths in VALUE_ROLES.get(schema.name, {}).items()
                           if schema.has_path(paths[0]))
    return "\n".join([f"collection {schema.name}", *keep, f"  roles: {roles_line}"]
                     + ([f"  full-text over: {', '.join(schema.text_fields)}"] if schema.text_fields else []))


def build_messages(ctx: PlanningContext, max_rows: int = 200) -> list[tuple[str, str]]:
    draft = ctx.draft = ctx.draft or OfflinePlanner().plan(ctx)
    schemas = _relevant(ctx, draft)
    others = sorted(set(ctx.schemas) - {sc.name for sc in schemas})
    asker = (f"The asker (\"I\", \"me\", \"my\") is {_describe_person(ctx.asker, schemas)}" if ctx.asker
             else "The asker is unknown.")
    people = "\n".join(f"- {m.text!r} -> {_describe_person(m.person, schemas)}" for m in ctx.mentions if m.person) or "(none)"
    times = "\n".join(_describe_time(t) for t in ctx.times) or "(none)"
    system = PLANNER_SYSTEM.format(
        max_rows=max_rows, now=ctx.now.strftime("%Y-%m-%dT%H:%M:%SZ"), asker=asker,
        schemas="\n".join([*(schema_slice(sc, ctx.question, also=_paths(draft)) for sc in schemas)]
                          + ([f"other collections: {', '.join(others)}"] if others else [])), people=people, times=times,
        examples=_examples(ctx, schemas), draft=json.dumps(_written(draft), ensure_ascii=False),
        not_understood=", ".join(repr(s["text"]) for s in draft.not_understood) or "none")
    messages = [("system", system), ("human", ctx.question)]
    for attempt in ctx.previous[-2:]:
        messages.append(("ai", json.dumps(_written(attempt.plan), ensure_ascii=False)))
        messages.append(("human", PLANNER_RETRY.format(attempt="(above)", error=attempt.error)))
    return messages


def _paths(plan: Plan) -> frozenset[str]:
    ir = plan.ir
    if ir is None:
        return frozenset()
    return frozenset([f.field for f in ir.filters] + [t.field for t in ir.times] + ([ir.shape.field] if ir.shape.field else []))


def _written(plan: Plan) -> Any:
    """A plan as the model writes it: its IR without the parts that say nothing (fewer tokens to read)."""
    if plan.ir is None:
        return {"collection": plan.collection, "pipeline": to_extended_json(plan.pipeline)}
    return _said(plan.ir.to_json())


def _said(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _said(v) for k, v in value.items()
                if v is not None and v != [] and k != "span" and (k, v) not in (("negate", False), ("over", "records"))}
    if isinstance(value, list):
        return [_said(v) for v in value]
    return value


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


def parse_plan(text: str) -> PlanIR:
    """The IR in a model's answer: the JSON object in it (models wrap it in prose or code fences)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise IRError("the answer holds no JSON object")
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise IRError(f"the answer is not valid JSON: {exc.msg}") from None
    return PlanIR.from_json(data)


def link_filters(ir: PlanIR, schema: CollectionSchema, ctx: PlanningContext) -> None:
    """`link_people` for the IR's filters: a person written by name in a people field becomes its handle."""
    for f in ir.filters:
        path = resolve_field(schema, f.field)
        f.value = link_people([{"$match": {path: f.value}}], schema.name, ctx)[0]["$match"][path]


def _json_mode(model: Any) -> Any:
    """The model asked for JSON in the plan's schema where it takes one (OpenAI-compatible servers,
    the local model included); any other chat model answers as it is, and its text is parsed alike."""
    try:
        from langchain_openai import ChatOpenAI
        from openai import BadRequestError
    except ImportError:
        return model
    if isinstance(model, ChatOpenAI):
        # An endpoint that refuses a schema in `response_format` is asked again without it: the prompt
        # asks for the same JSON, and the answer is parsed the same way.
        return model.bind(response_format={"type": "json_object", "schema": PLAN_JSON_SCHEMA}).with_fallbacks(
            [model], exceptions_to_handle=(BadRequestError,))
    return model


class LLMPlanner:
    name = "llm"

    def __init__(self, model: Any, max_rows: int = 200):
        self.max_rows = max_rows
        # An unreadable answer is asked for again at once; a readable but wrong plan is the retry edge's.
        self.runnable = (_json_mode(model) | RunnableLambda(lambda m: parse_plan(m.content))).with_retry(
            stop_after_attempt=2, retry_if_exception_type=(IRError,), wait_exponential_jitter=False)
        self.model = model

    def plan(self, ctx: PlanningContext) -> Plan:
        ir: PlanIR = self.runnable.invoke(build_messages(ctx, self.max_rows))
        schema = ctx.schemas.get(ir.collection)
        if schema is None:
            raise IRError(f"collection {ir.collection!r} does not exist or is empty; "
                          f"use one of: {', '.join(sorted(ctx.schemas))}")
        if ir.pipeline is not None:
            ir.pipeline = link_people(ir.pipeline, ir.collection, ctx)
        link_filters(ir, schema, ctx)
        return Plan(collection=ir.collection, pipeline=compile_plan(ir, schema), confidence=0.8,
                    planner="llm", notes=["written by the LLM planner"], ir=ir)

    def tiebreak(self, question: str, mention: Mention) -> Person | None:
        candidates = "\n".join(f"- key={p.key!r}: {p.name} (team {p.team})" for p in mention.candidates)
        try:
            reply = self.model.invoke([("system", TIEBREAK_SYSTEM.format(candidates=candidates)), ("human", question)])
            key = json.loads(reply.content[reply.content.find("{"):reply.content.rfind("}") + 1]).get("key")
        except Exception:  # an unusable answer is no answer: the user is asked instead
            return None
        return next((p for p in mention.candidates if p.key == key), None)

"""The LLM planner: any LangChain chat model writes the plan IR (`query/ir.py`) as JSON, given what
code already knows; `query/compile.py` turns it into the pipeline.

The system prompt is one fixed text (the IR and its rules), so a llama.cpp server reuses its evaluated
prefix across questions. The question's own part is sized to it: the fields of the collection it names
(those its words or the planner's roles touch, in a compact notation), the people and time ranges
already resolved by code, the context set's named filters for words the offline draft did not
understand, at most two context-set templates close to the question, and the draft IR. Models that
take a JSON schema for their output (OpenAI-compatible servers) are given the plan's schema without
spans and a short answer cap; any other chat model is asked for the JSON text, parsed the same way.
The plan is untrusted: its IR is checked as it is read, and its pipeline goes through the validator.

A question about a tenant's own collections only (a team's tables, TEND's databases) is asked for the
MongoDB pipeline itself (`PIPELINE_SYSTEM`): the IR cannot say most of what is asked of such tables
(nested fields, joins, computed columns). Its prompt is the collections' fields nested as they are
stored, solved examples the caller retrieves, the offline draft, and the question; the answer,
{"collection": C, "pipeline": [...]} asked without a schema (grammar decoding is slow on small
machines), has its collection and field names matched to the tenant's spelling and its compared values
to the fields' types (`model_repairs`), and is validated and run with scope like any other plan."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from contextlib import closing
from functools import lru_cache
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages
from langchain_core.runnables import RunnableLambda

from context_engine.chat_models import ModelCall, guarded, openai_timeout, record_call
from context_engine.prompts import PIPELINE_QUESTION, PIPELINE_SYSTEM, PLANNER_QUESTION, PLANNER_RETRY, PLANNER_SYSTEM
from context_engine.query.compile import compile_plan, resolve_field
from context_engine.query.context_sets import ContextSet, shipped
from context_engine.query.fields import people_paths
from context_engine.query.identity import Person
from context_engine.query.ir import PLAN_JSON_SCHEMA, WORD, Filter, IRError, PlanIR
from context_engine.query.model_repairs import own_spelling, typed_literals
from context_engine.query.offline import OfflinePlanner, detect_collection
from context_engine.query.plan import Plan, PlanningContext, from_extended_json, to_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import validate_pipeline

EXAMPLES = 2
# A template is shown as an example only this close to the question (rapidfuzz token-set score, 0-100):
# a far example costs the model time to read and pulls its plan off the question.
EXAMPLE_SCORE = 75.0
# The longest answer a plan needs (a few filters, a time, a shape): the offline drafts of the dev sets
# are ~90 tokens, 95% under 150, and the longest plan the local model wrote on them 178 (measured with
# its vocabulary); a model that runs on is cut here, and its unreadable answer is an error, not waited for.
MAX_ANSWER_TOKENS = 200
# The model's plan is corrected at most once (shown its error): on 2 cores a call costs 15-60 s, and a
# plan wrong twice is rarely right the third time; the offline plan, when it has one, answers instead.
MAX_CORRECTIONS = 1
# Seconds an OpenAI-compatible endpoint may stay silent: the answer is streamed (`first_object_of`), so
# this is the wait for its first token - the prompt's evaluation, which a server does not stop for a
# client that left (llama.cpp finishes it, and the next request queues behind it) - then for each next
# one. A 1.5B model on 2 cores shared with other jobs evaluated 700-900 prompt tokens in 40-180 s
# (measured); a timeout is an error the engine reports beside the offline plan it keeps ("LLM planner
# failed (OpenAITimeoutError)"), never a silent wait.
PLANNER_TIMEOUT = 120.0
# Leaves that name what a question says by a parent ("milestone" for milestone.title, "closed_by" for
# closed_by.login): a field so named is listed when its parent is.
_LABEL_LEAVES = frozenset({"name", "title", "login", "state", "key"})
_COMPACT = {"ensure_ascii": False, "separators": (",", ":")}
# The most fields of a tenant's own collection a prompt lists (every one it has, for TEND's tables).
MAX_OWN_FIELDS = 60
# A pipeline is longer than an IR plan (a join, a group, a projection): its cap is a little higher.
MAX_PIPELINE_TOKENS = 300
# Characters of collection listing in a pipeline prompt (~600 tokens: half of what a question may cost
# on 2 cores); collections past it are named only, those the question names first.
MAX_LISTING_CHARS = 2000
_NUMBERS = frozenset({"int", "long", "double", "decimal"})


@lru_cache(maxsize=1)
def context_sets() -> ContextSet:
    """The shipped context set: its templates are the model's examples, its facets named filters."""
    return shipped()


def context_set_of(ctx: PlanningContext) -> ContextSet:
    """The tenant's context set (its own templates, taught ones included) when the planning context
    carries one, else the shipped one."""
    return ctx.context_set if isinstance(ctx.context_set, ContextSet) else context_sets()


def _relevant(ctx: PlanningContext, draft: Plan) -> list[CollectionSchema]:
    """The collection the question names, else the one the draft guessed: a short prompt is a better
    prompt, and a faster one (the other collections are listed by name). A tenant's own collections
    are named by their spec's words, every one the question names (a question may join them); when
    none is named, the draft's guess among them is no better than the model's, so all are listed."""
    named, _ = detect_collection(ctx.question, ctx.schemas)
    if named:
        return [ctx.schemas[named]]
    own = [
        sc
        for sc in ctx.schemas.values()
        if sc.own_kind is not None and re.search(sc.kind.pattern(), ctx.question, re.I | re.ASCII)
    ]
    if own:
        return own
    guessed = ctx.schemas.get(draft.collection)
    return [guessed] if guessed is not None and guessed.own_kind is None else list(ctx.schemas.values())


def _describe_person(person: Person, schemas: list[CollectionSchema]) -> str:
    """The exact value to write for this person in the people fields of the relevant collections, one
    entry per handle kind ("Rashid Khan: 'rsh-dev' in user.login, reviews.user.login ...")."""
    fields: dict[str, list[str]] = {}
    for schema in schemas:
        for options in schema.kind.people_roles().values():
            for path, kind in options:
                if schema.has_path(path) and person.handle(kind):
                    fields.setdefault(person.handle(kind), []).append(
                        path if len(schemas) == 1 else f"{schema.name}.{path}"
                    )
    return f"{person.name}: " + "; ".join(
        f"{handle!r} in {', '.join(dict.fromkeys(paths))}" for handle, paths in fields.items()
    )


def _describe_time(rng) -> str:
    """The time expression and its bounds as the model writes them in a time range."""
    bounds = {"start": rng.start, "end": rng.end}
    return f"{rng.text!r} -> " + json.dumps({k: to_extended_json(v) for k, v in bounds.items()}, **_COMPACT)[1:-1]


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff]", text)}


def _valid(pipeline: Any, schema: CollectionSchema) -> bool:
    return not validate_pipeline(from_extended_json(pipeline), schema)


def _examples(ctx: PlanningContext, schemas: list[CollectionSchema], given: list[str] = ()) -> str:
    """At most `EXAMPLES` context-set templates close to the question (`ContextSet.similar_templates`),
    valid for this tenant's schema (a Jira-shaped example misleads on GitHub issues), each as its
    example question and the plan bound to that example's values; then the `given` ones (as many as
    the caller chose)."""
    by_name = {sc.name: sc for sc in schemas}
    shown = []
    for template, score in context_set_of(ctx).similar_templates(ctx.question, k=2 * EXAMPLES):
        schema = by_name.get(template.collection)
        if score < EXAMPLE_SCORE or schema is None or not template.example.get("question"):
            continue
        pipeline = to_extended_json(template.instantiate(template.example_bindings()))
        if _valid(pipeline, schema):
            shown.append(
                f"Q: {template.example['question']} -> "
                + json.dumps({"collection": template.collection, "pipeline": pipeline}, **_COMPACT)
            )
    shown = shown[:EXAMPLES] + list(given)
    return "\nExamples:\n" + "\n".join(shown) if shown else ""


def _facets(ctx: PlanningContext, schemas: list[CollectionSchema], draft: Plan) -> str:
    """The context set's named filters ("good first issues") said by words the draft did not
    understand, valid for this tenant: what the draft understood is already in it, and a facet
    phrase said as another word ("PRs Ana opened" is not the facet "open") only misleads."""
    unread = " ".join(s["text"] for s in draft.not_understood)
    found = [
        f"{f.name!r}: {json.dumps(f.match, **_COMPACT)}"
        for sc in schemas
        for f in context_set_of(ctx).matching_facets(unread, sc.name)
        if _valid([{"$match": f.match}], sc)
    ]
    return "\nNamed filters the question says (write them as filters): " + "; ".join(found) if found else ""


def _named(path: str, asked: set[str]) -> bool:
    """The question says a word of the field's leaf, or of its parent when the leaf is a label
    ("milestone" lists milestone.title); a word of some other ancestor does not ("closed" names
    closed_at, not closed_by.events_url)."""
    parts = path.split(".")
    said = set(parts[-1:]) | (set(parts[-2:-1]) if parts[-1] in _LABEL_LEAVES else set())
    return bool(asked & _words(" ".join(said).replace("_", " ")))


def schema_slice(schema: CollectionSchema, question: str, max_enum: int = 8, also: frozenset[str] = frozenset()) -> str:
    """The fields a plan for this question may need, in one compact line each: those the planners'
    roles name, those the question names (`_named`), those holding a value the question says, those
    the draft uses (`also`). Dates are listed together; values are shown only for small or named
    enumerations. A short prompt is a better prompt for a small model, and a faster one. A tenant's
    own collection has no roles to stand for its fields and its names are not the question's words
    ("Fname" for "first name"), so all its fields are listed, up to `MAX_OWN_FIELDS`."""
    everything = schema.own_kind is not None
    asked = _words(question)
    low = question.lower()
    people = people_paths(schema.kind)
    roles = {p for paths in schema.kind.roles().values() for p in paths} | people | also
    dates, keep = [], []
    for path, info in schema.fields.items():
        if "object" in info.types and len(info.types) <= 2:
            continue  # its subfields are listed
        named = _named(path, asked)
        valued = any(isinstance(v, str) and len(v) >= 2 and v.lower() in low for v in info.enum or [])
        if not (path in roles or named or valued or everything) or not schema.has_path(path):
            continue
        kinds = info.types - {"null"}
        if kinds == {"date"}:
            dates.append(path)
            continue
        entry = path + ("[]" if info.in_array else "") + ("" if kinds <= {"string"} else ":" + "|".join(sorted(kinds)))
        # Handles are given under People; other values are shown when few, or when the question
        # names the field or says one of them (those first).
        values = (
            []
            if path in people or path.endswith(".login")
            else sorted((v for v in info.enum or [] if isinstance(v, str)), key=lambda v: v.lower() not in low)
        )
        shown = max_enum if (named or valued) else 4 if len(values) <= 4 else 0
        if values and shown:
            entry += "=" + "|".join(values[:shown]) + ("|..." if len(values) > shown else "")
        keep.append(entry)
    if everything:
        keep = keep[:MAX_OWN_FIELDS]
    # Roles are not listed: their paths are, and one name per field is less for a small model to weigh.
    # The full-text fields are not listed: the 1.5B model copied their names into "text" as topic words.
    return "\n".join([f"{schema.name}: " + ", ".join(keep), f" dates: {', '.join(dates)}"])


def nested_fields(schema: CollectionSchema, question: str) -> str:
    """A collection's fields as they are nested, in one line: `Orders[{id:num,Items[{name}]}]` is an
    array of objects, `tags[]` an array of values; numbers, dates and booleans are marked, strings are
    not; a value of a field that the question says (in any case) is shown as stored (`Type=Private`).
    The engine's own `ref` is left out: it is no column of the team's table."""
    low = question.lower()
    children: dict[str, list[str]] = {}
    for path in schema.fields:
        if path != "ref":
            children.setdefault(path.rpartition(".")[0], []).append(path)

    def render(path: str, in_array: bool) -> str:
        info = schema.fields[path]
        name = path.rpartition(".")[2]
        if path in children:
            inner = ",".join(render(child, info.in_array) for child in children[path])
            return f"{name}[{{{inner}}}]" if info.in_array else f"{name}{{{inner}}}"
        kinds = info.types - {"null"}
        marks = sorted({"num" if k in _NUMBERS else k for k in kinds} - {"string", "object", "array"})
        said = [v for v in info.enum or [] if isinstance(v, str) and len(v) >= 2 and v.lower() in low]
        return (
            name
            + ("[]" if info.in_array and not in_array else "")
            + (":" + "|".join(marks) if marks else "")
            + ("=" + "|".join(said[:3]) if said else "")
        )

    return f"{schema.name}: " + ",".join(render(path, False) for path in children.get("", []))


def own_only(schemas: list[CollectionSchema]) -> bool:
    """The question is about a tenant's own collections only: it is asked for a pipeline."""
    return bool(schemas) and all(sc.own_kind is not None for sc in schemas)


def _listing(ctx: PlanningContext, named: list[CollectionSchema]) -> str:
    """The tenant's own collections for a pipeline: those the question names first, then the others
    it may join, each with its nested fields while they fit `MAX_LISTING_CHARS`, the rest by name."""
    ordered = named + [sc for sc in ctx.schemas.values() if sc.own_kind is not None and sc not in named]
    lines, others, used = [], [], 0
    for sc in ordered:
        line = nested_fields(sc, ctx.question)
        if used + len(line) <= MAX_LISTING_CHARS or not lines:
            lines.append(line)
            used += len(line)
        else:
            others.append(sc.name)
    return "\n".join(lines + ([f"other collections: {', '.join(others)}"] if others else []))


def _pipeline_messages(
    ctx: PlanningContext,
    schemas: list[CollectionSchema],
    draft: Plan,
    examples: Callable[[str], list[str]] | None,
) -> list[tuple[str, str]]:
    people = "; ".join(f"{m.text!r} -> {_describe_person(m.person, schemas)}" for m in ctx.mentions if m.person)
    times = "; ".join(_describe_time(t) for t in ctx.times)
    question = PIPELINE_QUESTION.format(
        schemas=_listing(ctx, schemas),
        people=f"\nPeople: {people}" if people else "",
        times=f"\nTimes: {times}" if times else "",
        examples=_examples(ctx, schemas, examples(ctx.question) if examples else []),
        draft=_pipeline_draft(draft),
        question=ctx.question,
    )
    return [("system", PIPELINE_SYSTEM), ("human", question)]


def _pipeline_draft(draft: Plan) -> str:
    """The offline plan as a hint, with the words it did not read: on a team's own tables its fields
    and values are linked by code (right where the model guesses), its shape often not; none when it
    planned nothing."""
    if not draft.pipeline:
        return ""
    unread = ", ".join(repr(s["text"]) for s in draft.not_understood)
    # The engine's `ref` (a default order, a row's link) is no column of the team's table: a model
    # copying it would show a column nobody asked for.
    stages = [
        {name: {k: v for k, v in body.items() if k != "ref"} if name in ("$sort", "$project") else body}
        for stage in to_extended_json(draft.pipeline)
        for name, body in stage.items()
    ]
    pipeline = [stage for stage in stages if next(iter(stage.values())) != {}]
    return (
        "\nRule-based draft (fix what the question says differently): "
        + json.dumps({"collection": draft.collection, "pipeline": pipeline}, **_COMPACT)
        + (f"; it did not read {unread}" if unread else "")
    )


def build_messages(
    ctx: PlanningContext, max_rows: int = 200, examples: Callable[[str], list[str]] | None = None
) -> list[tuple[str, str]]:
    """`examples` gives solved questions close to this one ("Q: ... -> {plan}" lines), beside the
    context set's: an evaluation's training questions, from other databases."""
    draft = ctx.draft = ctx.draft or OfflinePlanner().plan(ctx)
    schemas = _relevant(ctx, draft)
    messages = (
        _pipeline_messages(ctx, schemas, draft, examples)
        if own_only(schemas)
        else _plan_messages(ctx, schemas, draft, max_rows, examples)
    )
    for attempt in ctx.previous[-2:]:
        messages.append(("ai", json.dumps(_written(attempt.plan), **_COMPACT)))
        messages.append(("human", PLANNER_RETRY.format(attempt="(above)", error=attempt.error)))
    return messages


def _plan_messages(
    ctx: PlanningContext,
    schemas: list[CollectionSchema],
    draft: Plan,
    max_rows: int,
    examples: Callable[[str], list[str]] | None,
) -> list[tuple[str, str]]:
    others = sorted(set(ctx.schemas) - {sc.name for sc in schemas})
    asker = f"The asker (I, me, my) is {_describe_person(ctx.asker, schemas)}" if ctx.asker else "The asker is unknown."
    question = PLANNER_QUESTION.format(
        now=ctx.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        asker=asker,
        schemas="\n".join(
            [*(schema_slice(sc, ctx.question, also=_paths(draft)) for sc in schemas)]
            + ([f"other collections: {', '.join(others)}"] if others else [])
        ),
        people="; ".join(f"{m.text!r} -> {_describe_person(m.person, schemas)}" for m in ctx.mentions if m.person)
        or "none",
        times="; ".join(_describe_time(t) for t in ctx.times) or "none",
        facets=_facets(ctx, schemas, draft),
        examples=_examples(ctx, schemas, examples(ctx.question) if examples else []),
        draft=json.dumps(_written(draft), **_COMPACT),
        not_understood=", ".join(repr(s["text"]) for s in draft.not_understood) or "none",
        question=ctx.question,
    )
    return [("system", PLANNER_SYSTEM.format(max_rows=max_rows)), ("human", question)]


def _paths(plan: Plan) -> frozenset[str]:
    ir = plan.ir
    if ir is None:
        return frozenset()
    return frozenset(
        [f.field for f in ir.filters] + [t.field for t in ir.times] + ([ir.shape.field] if ir.shape.field else [])
    )


def _written(plan: Plan) -> Any:
    """A plan as the model writes it: its pipeline when it wrote one, else its IR without the parts that
    say nothing (fewer tokens to read)."""
    if plan.ir is None or plan.ir.pipeline is not None:
        return {"collection": plan.collection, "pipeline": to_extended_json(plan.pipeline)}
    return _said(plan.ir.to_json())


def _said(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _said(v)
            for k, v in value.items()
            if v is not None and v != [] and k != "span" and (k, v) not in (("negate", False), ("over", "records"))
        }
    if isinstance(value, list):
        return [_said(v) for v in value]
    return value


def link_people(pipeline: Any, collection: str, ctx: PlanningContext) -> Any:
    """Code corrects the model: a person written by name in a people field becomes that field's handle.

    Small models write "Alex Chen" into `user.login` even when told the login; the directory knows it.
    """
    schema = ctx.schemas.get(collection)
    roles = schema.kind.people_roles() if schema is not None else {}
    kinds = {path: kind for options in roles.values() for path, kind in options}

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

    return (
        [
            {name: walk(body) if name == "$match" else body for name, body in stage.items()}
            if isinstance(stage, dict)
            else stage
            for stage in pipeline
        ]
        if isinstance(pipeline, list)
        else pipeline
    )


def parse_plan(text: str) -> PlanIR:
    """The IR in a model's answer: the JSON object in it (models wrap it in prose or code fences)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise IRError("the answer holds no JSON object")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise IRError(f"the answer is not valid JSON: {exc.msg}") from None
    return PlanIR.from_json(data)


def link_filters(ir: PlanIR, schema: CollectionSchema, ctx: PlanningContext) -> None:
    """`link_people` for the IR's filters: a person written by name in a people field becomes its handle."""
    for f in ir.filters:
        path = resolve_field(schema, f.field)
        f.value = link_people([{"$match": {path: f.value}}], schema.name, ctx)[0]["$match"][path]


def left_out(plan: Plan, draft: Plan, ctx: PlanningContext) -> list[str]:
    """The words for people and times, resolved by code, that the offline draft's plan uses and the
    model's plan does not (no handle of that person, not both bounds of that range): a plan that
    explains less of the question than the offline one is not taken over it."""
    written, drafted = (json.dumps(to_extended_json(p.pipeline), **_COMPACT) for p in (plan, draft))
    people = [(m.text, m.person) for m in ctx.mentions if m.person] + ([("I", ctx.asker)] if ctx.asker else [])
    missing = []
    for text, person in people:
        quoted = [json.dumps(h) for h in person.handles.values() if h]
        if any(q in drafted for q in quoted) and not any(q in written for q in quoted):
            missing.append(text)
    for rng in ctx.times:
        bounds = [json.dumps(to_extended_json(b), **_COMPACT) for b in (rng.start, rng.end) if b is not None]
        if bounds and all(b in drafted for b in bounds) and not all(b in written for b in bounds):
            missing.append(rng.text)
    return list(dict.fromkeys(missing))


def _without_spans(schema: Any) -> Any:
    """The plan's JSON schema without its `span` properties: spans are code's to set, and every
    token the model writes costs it time."""
    if isinstance(schema, dict):
        return {k: _without_spans(v) for k, v in schema.items() if k != "span"}
    if isinstance(schema, list):
        return [_without_spans(v) for v in schema]
    return schema


ANSWER_SCHEMA = _without_spans(PLAN_JSON_SCHEMA)


def _json_mode(model: Any, schema: dict[str, Any] | None = ANSWER_SCHEMA, max_tokens: int = MAX_ANSWER_TOKENS) -> Any:
    """The model asked for JSON in the plan's schema where it takes one (OpenAI-compatible servers,
    the local model included); any other chat model answers as it is, and its text is parsed alike.
    `schema` None: no schema, only the cap (a pipeline answer, see `LLMPlanner.plan`). The plan's
    schema costs no time a token: on the local model, 1.03 s a token with it against 1.15 s without
    (the same prompt, 2 cores at load 4.4, measured); without it the model copied the draft whole,
    with it the model also wrote the year the draft had missed."""
    try:
        from langchain_openai import ChatOpenAI
        from openai import BadRequestError
    except ImportError:
        return model
    if isinstance(model, ChatOpenAI):
        # The answer is capped with `max_tokens` in the body: langchain-openai sends its own cap as
        # `max_completion_tokens`, which llama.cpp's server does not read. An endpoint that refuses the
        # schema or the cap (a 400) is asked again without them: the prompt asks for the same JSON,
        # and the answer is parsed the same way.
        timed = model.bind(timeout=openai_timeout(PLANNER_TIMEOUT))
        constrained = {"response_format": {"type": "json_object", "schema": schema}} if schema is not None else {}
        asked = timed.bind(**constrained, extra_body={"max_tokens": max_tokens}).with_fallbacks(
            [timed], exceptions_to_handle=(BadRequestError,)
        )
        return RunnableLambda(lambda messages, config: first_object_of(asked, messages, config))
    return model


def first_object_of(runnable: Any, messages: Any, config: Any = None) -> AIMessage:
    """The model's answer read as a stream and cut where its first JSON object closes. A small model
    goes on after the plan (a second code fence, an explanation) until its cap: on 2 loaded cores
    each such token costs ~0.13 s, and a server streaming its answer stops generating when the
    client closes the stream (llama.cpp's does), so closing it here also frees the server at once."""
    text, end, written, started = "", None, 0, time.perf_counter()
    with closing(iter(runnable.stream(messages, config))) as chunks:
        for chunk in chunks:
            content = getattr(chunk, "content", chunk)
            piece = content if isinstance(content, str) else "".join(str(c.get("text", c)) for c in content)
            text += piece
            usage = getattr(chunk, "usage_metadata", None)
            written = usage["output_tokens"] if usage else written + bool(piece)
            if (end := object_end(text)) is not None:
                break
    prompt = sum(len(str(m.content)) for m in convert_to_messages(messages))
    record_call(ModelCall(time.perf_counter() - started, prompt, written))
    return AIMessage(text if end is None else text[:end])


def object_end(text: str) -> int | None:
    """The index just past the first complete top-level JSON object in `text`, or None while it is
    still open; braces inside strings are not counted."""
    depth, in_string, escaped = 0, False, False
    start = text.find("{")
    if start < 0:
        return None
    for i in range(start, len(text)):
        ch = text[i]
        if escaped:
            escaped = False
        elif in_string:
            escaped = ch == "\\"
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def topic_as_words(ir: PlanIR, schema: CollectionSchema) -> None:
    """The model's topic words in a structured plan (conditions, times or a shape besides a list) read
    by the offline planner's rule: each a words condition on the records' subject, in its family
    (`topic_words`), not `$text`. A quoted name or a word that is no plain word stays a search."""
    structured = bool(ir.filters or ir.times or ir.shape.kind != "list")
    words = [w.lower() for w in ir.text]
    if not (structured and words and schema.text_fields and all(WORD.fullmatch(w) for w in words)):
        return
    ir.filters += [Filter(schema.text_fields[0], "words", [w]) for w in dict.fromkeys(words)]
    ir.text = []


class LLMPlanner:
    name = "llm"

    def __init__(self, model: Any, max_rows: int = 200, examples: Callable[[str], list[str]] | None = None):
        self.max_rows = max_rows
        self.examples = examples  # solved questions close to the asked one (`build_messages`)
        self.model = model

    def _ask(self, messages: list[tuple[str, str]], schema: dict[str, Any] | None, max_tokens: int) -> PlanIR:
        # One call: an unreadable answer is an error like a wrong plan (the offline plan stays, or the
        # retry edge shows the model its error); asked again unchanged, a model at temperature 0 would
        # only write it again. A failed call is not repeated: `guarded` reports it to the run and
        # refuses a model found down.
        return parse_plan(guarded(self.model, _json_mode(self.model, schema, max_tokens)).invoke(messages).content)

    def plan(self, ctx: PlanningContext) -> Plan:
        corrections = sum(a.plan.planner == "llm" for a in ctx.previous)
        if corrections > MAX_CORRECTIONS:
            raise IRError(f"the model's plan was corrected {MAX_CORRECTIONS} time(s) and still failed")
        messages = build_messages(ctx, self.max_rows, self.examples)
        if messages[0][1] == PIPELINE_SYSTEM:
            # Asked without a schema: a schema of {collection, pipeline: [objects]} holds little that
            # `own_spelling` and the validator do not check, and llama.cpp decoded under that grammar
            # ~10 times slower a token (1.3-5 s against 0.17 s unconstrained, measured on 2 cores).
            ir = self._ask(messages, None, MAX_PIPELINE_TOKENS)
            ir.collection, ir.pipeline = own_spelling(ir.collection, ir.pipeline, ctx.schemas)
            if ir.collection in ctx.schemas:
                ir.pipeline = typed_literals(ir.pipeline, ctx.schemas[ir.collection])
        else:
            ir = self._ask(messages, ANSWER_SCHEMA, MAX_ANSWER_TOKENS)
        schema = ctx.schemas.get(ir.collection)
        if schema is None:
            raise IRError(
                f"collection {ir.collection!r} does not exist or is empty; use one of: {', '.join(sorted(ctx.schemas))}"
            )
        if ir.pipeline is not None:
            ir.pipeline = link_people(ir.pipeline, ir.collection, ctx)
        link_filters(ir, schema, ctx)
        notes = ["written by the LLM planner"]
        if ir.text and not schema.text_index:
            # A collection with no full-text index (a team's table of names and numbers): the model's
            # topic words are words of the question it already read as fields, never a search to run.
            notes.append(f"topic words {' '.join(ir.text)!r} dropped: {schema.name} has no full-text index")
            ir.text = []
        topic_as_words(ir, schema)
        if not ir.text:  # no search: nothing to rank by relevance
            ir.shape.sort = [k for k in ir.shape.sort if k.field != "relevance"]
        planned = Plan(
            collection=ir.collection,
            pipeline=compile_plan(ir, schema, ctx.schemas),
            confidence=0.8,
            planner="llm",
            notes=notes,
            ir=ir,
        )
        if ctx.draft is not None and (dropped := left_out(planned, ctx.draft, ctx)):
            raise IRError(
                f"the plan leaves out {', '.join(map(repr, dropped))}, which the question says: "
                "write the values given under People and Times"
            )
        return planned

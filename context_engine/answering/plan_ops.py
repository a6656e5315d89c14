"""Follow-ups as operations on the last turn's plan (its IR), not as a question rewritten in words.

A turn leaves the IR its answer ran (`Turn.plan`) and the IR a later follow-up builds on (`Turn.base`:
the same, except after a turn that picked one record of a list, where it is that list). A follow-up that
changes the last plan is applied to that IR, and the new IR is carried forward:

- a record's person:  "who opened the earliest one?", "who was behind that one?", "回复最多的那个是谁开的"
                      -> the one record at that end (or the one record the last answer was), its person
- a new shape:        "how many is that", "只要数字", "list them" -> the same records, counted or listed
- a new time:         "the quarter before", "再往前一周呢，有几个？" -> the same plan, its window replaced
- a narrowing:        "only those with 5+ replies", "which of the open ones has the most comments"
                      -> the follow-up's own words planned over the same kind of record, their conditions
                      added to the last plan (replacing one on the same field), the grouping kept unless
                      they say a shape of their own; words they leave unread are said as not understood
- a condition gone:   "forget the label", "any state", "不限时间", "from anyone, not just him" -> the same plan
                      without it
- another kind:       "sorry, I meant PRs not issues", "換成 issue 看看" -> the same plan over that collection, each
                      field moved to the field of its role there (a person by their handle there)
- per period:         "can you break that down month by month?" -> the same records counted per month

Recognising the follow-up is `answering.followup`'s (`FollowUp.new_time`, `.reshape`, `.added`, `.within`,
`.restated`, `.collection`; "back to X — ..." hands over the thread as it was when X was asked about); this module
only applies the change. Anything it cannot apply returns None, and the rewritten question stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from context_engine.answering.followup import FollowUp, says_a_shape
from context_engine.query import engine
from context_engine.query.catalog import Catalog
from context_engine.query.compile import compile_plan
from context_engine.query.fields import field_for, person_field_for
from context_engine.query.identity import Person
from context_engine.query.ir import BUCKETS, RECORD_SHAPES, WORD_OPERATORS, Filter, PlanIR, Shape, SortKey, TimeRange
from context_engine.query.offline import OfflinePlanner
from context_engine.query.plan import Plan
from context_engine.query.planner.shape import DEFAULT_LIMIT
from context_engine.query.timeexpr import find_time_ranges
from context_engine.query.values import ValueIndex


@dataclass
class Operation:
    plan: Plan  # what this turn runs
    base: PlanIR  # what the next follow-up builds on
    how: str  # the change, in words


# "who opened the earliest one?", "who was behind that one", "whose was it", "是谁开的": the person of one record
_WHO = re.compile(
    r"\bwho(?:'s|\s+is|\s+was)?\s+(?:(?P<behind>behind|the\s+(?:author|opener|creator|reporter|poster|owner)\b)"
    r"|(?P<verb>opened|filed|started|posted|wrote|created|reported|raised|submitted|authored|made|sent|merged|closed)\b)"
    r"|(?:是)?谁(?P<cverb>开|提|发|写|创建|合并|关闭|关)的",
    re.I,
)
_VERB_ROLES = {"merged": "merger", "合并": "merger", "closed": "closer", "关闭": "closer", "关": "closer"}
# which one record: an end of the records in time, the one with the most of a measure, or the one the last
# answer was ("that one", "it")
_EARLIEST = re.compile(r"\b(?:earliest|oldest|first)\b|最早|最先|最老", re.I)
_LATEST = re.compile(r"\b(?:newest|latest|most\s+recent|last)\b|最新|最近|最晚", re.I)
_MOST = re.compile(r"\bmost\s+(?P<en>comments|replies|reactions)\b|(?P<cjk>回复|评论)最多", re.I)
_MEASURES = {"comments": "comments", "评论": "comments", "replies": "replies", "回复": "replies"}
_TOP_ONE = re.compile(r"\b(?:the\s+)?(?:top|first|number\s+one|#1)\s+one\b|第一个|第一条|排第一的", re.I)
# "when was it merged", "when did the top one get closed", "什么时候关闭的": a date of one record
_WHEN = re.compile(
    r"\bwhen\s+(?:was|did|were)\b.*?\b(?P<verb>opened|created|filed|posted|started|merged|closed|updated)\b"
    r"\s*(?:get\s+)?(?P<tail>.*)$"
    r"|(?:是)?什么时候(?P<cverb>开|提|创建|发|合并|关闭|关|更新)的",
    re.I,
)
_DATE_ROLES = {
    "merged": "merged",
    "closed": "closed",
    "updated": "updated",
    "合并": "merged",
    "关闭": "closed",
    "关": "closed",
    "更新": "updated",
}
_THAT_ONE = re.compile(r"\b(?:that|this|the)\s+one\b|\bit\b|那个|这个|那条|这条|它", re.I)
# A record's person only when the rest of the follow-up says nothing else ("who opened the earliest one
# in 2020" is a question of its own)
_PROJECTION_WORDS = re.compile(
    r"\b(?:who(?:'s|\s+is|\s+was)?|whoever|was|is|the|of|one|ones|those|these|them|that|this|it|in|there|among|"
    r"behind|author|opener|creator|reporter|poster|owner|opened|filed|started|posted|wrote|created|reported|raised|"
    r"submitted|authored|made|sent|merged|closed|earliest|oldest|first|newest|latest|most|recent|last|comments|"
    r"replies|reactions|with|and|so|then|ok|okay|pr|issue|thread|message|post|when|did|were|get|got|top|number|"
    r"updated)\b|#1"
    r"|是|谁|开|提|发|写|创建|合并|关闭|关|的|那个|这个|那条|这条|它|最早|最先|最老|最新|最近|最晚|回复|评论|最多|其中|里|中"
    r"|什么时候|更新|第一个|第一条|排第一|那|呢|吗"
    r"|[\s,，?？.。!！]",
    re.I,
)

# A question restated "in total" is about all such records, not those the last plan narrowed to
_IN_TOTAL = re.compile(r"\b(?:in\s+total|overall|altogether|all\s+told|in\s+all)\b|一共|总共|總共|总计|總計", re.I)

# "forget the label", "drop the time limit", "any state", "all of them regardless of label", "不限时间"
_DROP = re.compile(
    r"^(?:(?:ok(?:ay)?|and|now|so)[\s,]+)?(?:(?:forget|drop|ignore|remove|lose|never\s+mind|without)\s+(?:about\s+)?"
    r"(?:the\s+)?(?P<en>\w+)(?:\s+(?:filter|condition|limit|part|restriction))?"
    r"|(?:any|every|all)\s+(?P<any>\w+?)s?|regardless\s+of\s+(?:the\s+)?(?P<reg>\w+))(?:\s+(?:please|then|instead))?$"
    r"|^(?:不限|不管|不论|去掉|不要)(?P<cjk>时间|标签|状态|人|作者|仓库|工作区)(?:的?(?:限制|条件))?(?:了)?$",
    re.I,
)
_DROPPED_ROLES = {
    "label": ("label",),
    "labels": ("label",),
    "标签": ("label",),
    "state": ("state", "merged"),
    "status": ("state", "merged", "status"),
    "状态": ("state", "merged"),
    "author": ("author",),
    "person": ("author",),
    "作者": ("author",),
    "人": ("author",),
    "repo": ("repo",),
    "repository": ("repo",),
    "仓库": ("repo",),
    "workspace": ("workspace",),
    "工作区": ("workspace",),
}
# "from anyone, not just him", "by anybody", "everyone's", "所有人的", "不只是她的": the person condition gone
_ANYONE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|now|then|what\s+about|how\s+about)[\s,]+)*(?:(?:from|by|of|for)\s+)?"
    r"(?:anyone|anybody|everyone|everybody|any\s+(?:author|person|user|poster)|all\s+(?:authors|people|users|posters))"
    r"(?:'s|’s)?(?:[\s,;—–-]+(?:and\s+)?not\s+(?:just|only)\s+(?:him|her|them|his|hers|theirs|that\s+person|\w+(?:'s)?))?"
    r"(?:\s+(?:instead|then|too|please))?$"
    r"|^(?:那)?(?:所有人|任何人|大家|每个人|不管是谁|不论是谁)(?:的)?(?:呢)?$"
    r"|^(?:那)?(?:不只是?|不仅是?|不限于?)(?:他|她|他们|她们)(?:的)?(?:[，,\s]*(?:所有人|任何人|大家)的?)?(?:呢)?$",
    re.I,
)
_DROPPED_TIME = {"time", "date", "dates", "year", "month", "week", "period", "window", "时间"}


def base_of(turn: dict[str, Any]) -> PlanIR | None:
    """The IR a follow-up on `turn` builds on (None: the turn ran no plan the IR says)."""
    data = turn.get("base") or (turn.get("plan") or {}).get("ir")
    if not data:
        return None
    ir = PlanIR.from_json(data)
    return ir if ir.pipeline is None and ir.join is None and ir.unwind is None else None


def operate(
    question: str,
    followup: FollowUp,
    turns: list[dict[str, Any]],
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None = None,
) -> Operation | None:
    """The follow-up applied to the last turn's plan, or None when it is not such a change."""
    if not turns:
        return None
    base = base_of(turns[-1])
    schema = catalog.schemas.get(base.collection) if base is not None else None
    if base is None or schema is None:
        return None
    if followup.collection:
        return _switched(base, followup.collection, catalog)
    projected = _projection(question, base, catalog)
    if projected is not None:
        return projected
    dropped = _dropped(question, base, schema)
    if dropped is not None:
        return _operation(dropped, base=dropped, catalog=catalog, how="the last plan without that condition")
    counted = _person_counted(question, turns[-1], base, catalog)
    if counted is not None:
        return counted
    changed, shape_said = base, False
    how: list[str] = []
    unread: list[dict[str, Any]] = []
    if followup.within is not None:  # "those" after "which label is the biggest": that label's records
        field, key = followup.within
        kept = [f for f in base.filters if f.field != field]
        listed = _reshaped("list", base, schema) or base.shape  # a list is always a shape
        changed = replace(base, filters=[*kept, Filter(field, "eq", key)], shape=listed)
        how.append(f"the records with {field} {key}")
    if followup.restated and (any(f.field == "ref" for f in base.filters) or base.shape.limit == 1):
        return None  # a question of its own after one record ("who's the author?" then "how many did they open")
    if followup.restated and _IN_TOTAL.search(followup.restated):
        return None  # "how many messages in total did he write": all of them, not the last plan's narrower ones
    words = followup.added or followup.restated
    if words:
        before = changed
        narrowed = _narrowed(changed, words, catalog, asker, now, values)
        if narrowed is None:
            return None
        changed, unread = narrowed
        shape_said = changed.shape is not before.shape
        how.append(f"the last plan narrowed by {words!r}")
    if followup.new_time:
        moved = _moved(changed, followup.new_time, now, schema)
        if moved is None:
            return None
        changed = moved
        how.append(f"its time replaced by {followup.new_time!r}")
    if followup.reshape and not shape_said:
        shape = _reshaped(followup.reshape, changed, schema)
        if shape is None:
            return None
        changed = replace(changed, shape=shape)
        said = {"count": "counted", "list": "listed"}.get(followup.reshape, f"counted per {followup.reshape}")
        how.append(f"its records {said}")
    if not how:
        return None
    return _operation(changed, base=changed, catalog=catalog, how="; ".join(how), unread=unread)


def _switched(base: PlanIR, collection: str, catalog: Catalog) -> Operation | None:
    """The last plan over another kind of record ("I meant PRs, not issues"): each field moved to the
    field of the same role there (a person by their handle there); a condition the new kind has no field
    for is dropped and said, and a window or order on a date it lacks is put on when its records were
    created."""
    old, new = catalog.schemas[base.collection], catalog.schemas.get(collection)
    if new is None or collection == base.collection or any(f.via for f in base.filters) or base.shape.measures:
        return None
    created = field_for(new, "created")
    dates = {p for paths in old.kind.times.values() for p in paths}

    def moved(path: str) -> str | None:
        return _moved_field(path, old, new) or (created if path in dates else None)

    dropped: list[str] = []
    filters = []
    for f in base.filters:
        path = moved(f.field)
        if path is None:
            dropped.append(f.field)
            continue
        value = _handle_there(f.value, _handle_kind(f.field, old), _handle_kind(path, new), catalog)
        if value is None:
            return None  # the person has no handle there: nothing of theirs to look for
        filters.append(replace(f, field=path, value=value))
    times = []
    for t in base.times:
        path = moved(t.field)
        if path is None:
            return None
        if path != _moved_field(t.field, old, new):
            dropped.append(f"{t.field} (the window is on {path})")
        times.append(replace(t, field=path))
    shape = base.shape
    field = moved(shape.field) if shape.field else None
    sort = [replace(k, field=moved(k.field) or "") for k in shape.sort]
    fields = [moved(f) for f in shape.fields]
    if (shape.field and field is None) or any(not k.field for k in sort) or None in fields:
        return None
    shape = replace(shape, field=field, sort=sort, fields=[f for f in fields if f])
    switched = replace(base, collection=collection, filters=filters, times=times, shape=shape)
    how = f"the last plan over {new.kind.plural}"
    if dropped:
        how += f", without what {new.kind.plural} do not have: {', '.join(dropped)}"
    return _operation(switched, base=switched, catalog=catalog, how=how)


def _handle_kind(path: str, schema: Any) -> str | None:
    """The kind of handle a person field holds ("github", "jira"); None: not a person field."""
    return next((kind for fields in schema.kind.people_roles().values() for p, kind in fields if p == path), None)


def _handle_there(value: Any, was: str | None, now: str | None, catalog: Catalog) -> Any:
    """A person condition's value as the other kind's field holds it (a GitHub login, a Jira account)."""
    if was == now or was is None or now is None:
        return value
    if isinstance(value, list):
        moved = [_handle_there(v, was, now, catalog) for v in value]
        return None if None in moved else moved
    people = [p for p in catalog.directory.people if p.handle(was) == value]
    return people[0].handle(now) if len(people) == 1 else None


def _moved_field(path: str, old: Any, new: Any) -> str | None:
    """The field of another kind that holds what `path` holds in this one: the same role's field, else the
    same path when the other kind has it too (a plan may name a field by its role: "author")."""
    if path in old.kind.people_roles():
        return (person_field_for(new, path) or (None,))[0]
    if path in old.kind.roles():
        return field_for(new, path)
    role = _role_of(path, old)
    if role != path:
        moved = field_for(new, role) or (person_field_for(new, role) or (None,))[0]
        if moved is not None:
            return moved
    for role, paths in old.kind.roles().items():
        if path in paths:
            return field_for(new, role)
    return path if new.has_path(path) else None


def _operation(
    ir: PlanIR,
    base: PlanIR,
    catalog: Catalog,
    how: str,
    unread: list[dict[str, Any]] | None = None,
    person_field: tuple[str, str] | None = None,
) -> Operation:
    schema = catalog.schemas[ir.collection]
    pipeline = compile_plan(ir, schema, catalog.schemas)
    plan = Plan(
        ir.collection,
        pipeline,
        confidence=1.0 if not unread else 0.6,
        notes=[f"follow-up applied to the last plan: {how}"],
        person_field=person_field or _person_field(ir, schema),
        ir=ir,
        not_understood=list(unread or []),
    )
    return Operation(plan, base, how)


def _projection(question: str, base: PlanIR, catalog: Catalog) -> Operation | None:
    """ "who opened the earliest one?", "when was the top one merged?": a person or a date of one record of
    the last plan's records."""
    schema = catalog.schemas[base.collection]
    who, when = _WHO.search(question), _WHEN.search(question)
    if (who is None and when is None) or _PROJECTION_WORDS.sub("", question):
        return None
    one = _one_record(question, base, schema)
    if one is None:
        return None
    picked = replace(base, shape=one)
    if when is not None or who is None:  # the date itself, on the record that has it
        verb = (when.group("verb") or when.group("cverb")).lower() if when else ""
        date = field_for(schema, _DATE_ROLES.get(verb, "created"))
        if date is None:
            return None
        shown = replace(picked, shape=replace(one, fields=[date]))
        return _operation(shown, base=base, catalog=catalog, how=f"the {date} of one record")
    verb = (who.group("verb") or who.group("cverb") or "").lower()
    found = person_field_for(schema, _VERB_ROLES.get(verb, "author"))
    if found is None:
        return None
    path, kind = found
    pipeline = [
        *compile_plan(picked, schema, catalog.schemas),
        {"$group": {"_id": f"${path}", "count": {"$sum": 1}}},
    ]
    ir = replace(picked, pipeline=pipeline)
    return _operation(ir, base=base, catalog=catalog, how=f"the {path} of one record", person_field=(path, kind))


def _one_record(question: str, base: PlanIR, schema: Any) -> Shape | None:
    """The shape that keeps the one record the follow-up points at: an end in time, the most of a
    measure, or the one record the last answer was."""
    most = _MOST.search(question)
    date = base.times[0].field if base.times else field_for(schema, "created")
    if most is not None:
        measure = _MEASURES[(most.group("en") or most.group("cjk")).lower()]
        path = field_for(schema, measure) or (measure if schema.has_path(measure) else None)
        return Shape("list", sort=[SortKey(path, -1)], limit=1) if path else None
    if _EARLIEST.search(question) and date:
        return Shape("list", sort=[SortKey(date, 1)], limit=1)
    if _LATEST.search(question) and date:
        return Shape("list", sort=[SortKey(date, -1)], limit=1)
    one_before = base.shape.limit == 1 or (base.shape.kind in ("argmin", "argmax") and base.shape.over == "records")
    if base.shape.kind in RECORD_SHAPES and one_before:  # "who was behind that one?", "谁发的"
        return base.shape  # the one record the last answer was
    if _TOP_ONE.search(question) and base.shape.kind in RECORD_SHAPES and base.shape.sort:
        return replace(base.shape, limit=1)  # the first of the last answer's order
    return None


# "how many did lhoestq have in it?", "how many did they open in there": the last plan's records, someone's,
# counted
_PERSON_COUNTED = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then)[\s,]+)?how\s+many\s+(?:\w+\s+)?(?:did|does|do|has|have|had)\s+(?P<who>.+?)\s+"
    r"(?P<verb>have|had|got|get|open|opened|file|filed|post|posted|start|started|write|wrote|merge|merged|close|closed)"
    r"(?:\s+(?:in\s+(?:it|there|that|those|them|this)|of\s+(?:those|them|these)|there|among\s+them))?(?:\s+then)?$",
    re.I,
)
_PERSON_PRONOUN = re.compile(r"^(?:they|he|she|that\s+person|this\s+person|the\s+winner)$", re.I)
_COUNTED_ROLES = {"merge": "merger", "merged": "merger", "close": "closer", "closed": "closer"}


def _person_counted(question: str, previous: dict[str, Any], base: PlanIR, catalog: Catalog) -> Operation | None:
    said = _PERSON_COUNTED.match(question.strip(" ?？.。!！"))
    if said is None:
        return None
    who = said.group("who").strip()
    if _PERSON_PRONOUN.match(who):  # the person the last answer named first
        if not previous.get("answer_people"):
            return None
        who = previous["answer_people"][0]
    schema = catalog.schemas[base.collection]
    found = person_field_for(schema, _COUNTED_ROLES.get(said.group("verb").lower(), "author"))
    people = [m.person for m in catalog.directory.find_mentions(who) if m.person is not None and not m.is_asker]
    if found is None or len({p.key for p in people}) != 1:
        return None
    path, kind = found
    handle = people[0].handle(kind)
    if not handle:
        return None
    filters = [f for f in base.filters if f.field not in (path, _role_of(path, schema))]
    counted = replace(base, filters=[*filters, Filter(path, "eq", handle)], shape=Shape("count"))
    return _operation(counted, base=counted, catalog=catalog, how=f"the last plan's records of {who}, counted")


def _role_of(path: str, schema: Any) -> str:
    """The role a person path fills ("user.login": "author"), as a filter may name it."""
    return next(
        (role for role, fields in schema.kind.people_roles().items() if any(p == path for p, _ in fields)), path
    )


def _dropped(question: str, base: PlanIR, schema: Any) -> PlanIR | None:
    if _ANYONE.match(question.strip(" ?？.。!！")):
        people = {p for fields in schema.kind.people_roles().values() for p, _ in fields} | set(
            schema.kind.people_roles()
        )
        kept = [f for f in base.filters if f.field not in people]
        return replace(base, filters=kept) if len(kept) < len(base.filters) else None
    said = _DROP.match(question.strip(" ?？.。!！"))
    if said is None:
        return None
    word = next(g for g in said.groups() if g).lower()
    if word in _DROPPED_TIME:
        return replace(base, times=[]) if base.times else None
    roles = _DROPPED_ROLES.get(word)
    if roles is None:
        return None
    paths = {
        p for role in roles for p in (role, field_for(schema, role), (person_field_for(schema, role) or ("",))[0]) if p
    }
    kept = [f for f in base.filters if f.field not in paths]
    return replace(base, filters=kept) if len(kept) < len(base.filters) else None


def _narrowed(
    base: PlanIR, words: str, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> tuple[PlanIR, list[dict[str, Any]]] | None:
    """The follow-up's words planned over the last plan's kind of record, added to it."""
    ctx, failed = engine.resolve(words, now, catalog, asker, values=values)
    if failed is not None or ctx is None:
        return None
    ctx.collection = base.collection
    own = OfflinePlanner().plan(ctx)
    if own.ir is None or own.collection != base.collection or own.ir.pipeline is not None or own.ir.join:
        return None
    said = own.ir
    shape_said = said.shape.span is not None or said.shape.kind != "list" or says_a_shape(words)
    if said.text or any(f.op in WORD_OPERATORS for f in said.filters):
        return None  # a topic: read with the whole question around it, as the planner reads one
    if not (said.filters or said.times or shape_said):
        return None  # nothing read: the rewritten question is planned whole, and says what it did not read
    schema = catalog.schemas[base.collection]
    # a new value of a field that holds one replaces the old ("only lhoestq's"); a label is one more
    same = {f.field for f in said.filters if not _holds_many(schema, f.field)}
    filters = [f for f in base.filters if f.field not in same] + list(said.filters)
    shape = said.shape if shape_said else base.shape
    if shape.bucket and (base.shape.bucket or base.times):
        # "which month had the most" after closings per month: months of the date the last plan was about
        shape = replace(shape, field=base.shape.field if base.shape.bucket else base.times[0].field)
    narrowed = replace(
        base,
        filters=filters,
        times=said.times or base.times,
        text=[*base.text, *said.text],
        shape=shape,
    )
    return narrowed, own.not_understood


def _holds_many(schema: Any, field: str) -> bool:
    info = schema.fields.get(field_for(schema, field) or field)
    return bool(info is not None and info.in_array)


def _person_field(ir: PlanIR, schema: Any) -> tuple[str, str] | None:
    """(path, handle kind) when the plan groups by a person: its groups are said by display name."""
    if ir.shape.kind != "group" or not ir.shape.field or ir.shape.bucket:
        return None
    for fields in schema.kind.people_roles().values():
        for path, kind in fields:
            if path == ir.shape.field:
                return path, kind
    return None


def _moved(base: PlanIR, when: str, now: datetime, schema: Any) -> PlanIR | None:
    found = find_time_ranges(when, now)
    if len(found) != 1:
        return None
    new = found[0]
    if base.times:
        first = base.times[0]
        return replace(base, times=[TimeRange(first.field, new.start, new.end), *base.times[1:]])
    created = field_for(schema, "created")
    return replace(base, times=[TimeRange(created, new.start, new.end)]) if created else None


def _reshaped(how: str, base: PlanIR, schema: Any) -> Shape | None:
    """The last plan's records counted, listed, or counted per period ("month": of the date it was about)."""
    if how == "count":
        return Shape("count")
    date = base.times[0].field if base.times else field_for(schema, "created")
    if how in BUCKETS:
        return Shape("group", field=date, bucket=how) if date else None
    if base.shape.kind == "list":
        return base.shape
    return Shape("list", sort=[SortKey(date, -1)] if date else [], limit=DEFAULT_LIMIT)

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
- another person:     "what about Priya?", "换成李娜" -> the same plan, its conditions on the one person it was
                      about put on the new one's handle
- one record:         "who opened the second one?", "the one about X — how many comments did it get?",
                      "the ArrayXD one — ...", "#5948 有几条评论", "how many comments was that?" -> that record (by its
                      key, its subject's words, its number, or its topic), its person, date or field (a value as its
                      one group: "is it still open?"); a field its kind does not have ("what priority was it
                      given?") is declined
- why:                "why were they never merged?", "how come so many that month?" -> declined (no field holds a
                      reason), except why the one issue was closed: its state_reason
- a topic:            "any of those about streaming?", 其中有讲 parquet 的吗 -> the topic's condition as the planner
                      reads it in the rewritten question, added to the last plan

Recognising the follow-up is `answering.followup`'s (`FollowUp.new_time`, `.reshape`, `.added`, `.within`,
`.restated`, `.replacing`, `.collection`, `.person`, `.nth`, `.record`; "back to X — ..." hands over the thread as it was when X was asked about); this module
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
from context_engine.query.consistency import implies
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
    plan: Plan | None  # what this turn runs (None: nothing can answer it, `unanswerable` says why)
    base: PlanIR  # what the next follow-up builds on
    how: str  # the change, in words
    # the words of a field of one record that its kind has no field for ("what priority was it given?"):
    # the follow-up is declined, as a question naming something no record holds is
    unanswerable: str = ""
    # words the follow-up adds that name a value nobody has ("and for the performance label?"): the follow-up is
    # declined with the closest values, as a first question naming it is
    declined: engine.ResolutionFailed | None = None
    refusal: str = ""  # the decline in words, when it is not "no such field" ("why were they never merged?")


# "who opened the earliest one?", "who was behind that one", "whose was it", "是谁开的": the person of one record
_WHO = re.compile(
    r"\bwhose\s+(?:\w+\s+)?(?:was|is)\s+(?:that|it|this)\b"
    r"|\bwho(?:'s|\s+is|\s+was)?\s+(?:(?P<behind>behind|the\s+(?:author|opener|creator|reporter|poster|owner)\b)"
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
    r"\b(?:who(?:'s|\s+is|\s+was)?|whose|whoever|was|is|the|of|one|ones|those|these|them|that|this|it|in|there|among|"
    r"behind|author|opener|creator|reporter|poster|owner|opened|filed|started|posted|wrote|created|reported|raised|"
    r"submitted|authored|made|sent|merged|closed|earliest|oldest|first|newest|latest|most|recent|last|comments|"
    r"replies|reactions|with|and|so|then|ok|okay|pr|issue|thread|message|post|when|did|were|get|got|top|number|"
    r"updated)\b|#1"
    r"|是|谁|开|提|发|写|创建|合并|关闭|关|的|那个|这个|那条|这条|它|最早|最先|最老|最新|最近|最晚|回复|评论|最多|其中|里|中"
    r"|什么时候|更新|第一个|第一条|排第一|那|呢|吗|这些|那些|这几个|那几个"
    r"|[\s,，?？.。!！]",
    re.I,
)

# A question restated "in total" is about all such records, not those the last plan narrowed to
_IN_TOTAL = re.compile(r"\b(?:in\s+total|overall|altogether|all\s+told|in\s+all)\b|一共|总共|總共|总计|總計", re.I)

# "any state", "all labels", "every repo": a condition taken away ("forget the label", "drop that — ...", 不限时间 are
# `FollowUp.dropped`, taken away by `without`)
_DROP = re.compile(
    r"^(?:(?:ok(?:ay)?|and|now|so)[\s,]+)?(?:any|every|all)\s+(?P<any>\w+?)s?(?:\s+(?:please|then|instead))?$", re.I
)


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
    if followup.unnamed is not None:  # "the parquet one — ..." and no listed record, or several, says parquet
        words, refusal = followup.unnamed
        return Operation(None, base, "", unanswerable=words, refusal=refusal)
    if followup.collection:
        return _switched(base, followup.collection, catalog)
    picked = _picked(followup, turns[-1], base) or _the_record_before(question, turns[-1])
    if picked is not None and followup.record:  # "the ArrayXD one — how many comments has it got?", "#5948 有几条评论"
        question = followup.of_record
    why = _why(question, picked or base, catalog)
    if why is not None:
        return replace(why, base=base)
    about = _THE_ONE_ABOUT.match(question.strip(" ?？.。!！")) if picked is None else None
    if about is not None:  # "the one about parallel downloads — how many comments did it get?"
        picked = _picked_by_topic(about.group("topic"), base, catalog, asker, now, values)
        question = about.group("rest") if picked is not None else question
    projected = _projection(question, picked or base, catalog, picked is not None, turns[-1].get("standalone", ""))
    if projected is not None:
        return replace(projected, base=base) if picked is not None else projected
    repliers = _repliers_in_one(question, picked or base, catalog)
    if repliers is not None:
        return replace(repliers, base=base)
    valued = _field_of_one(_NTH.sub("", question) if picked else question, picked or base, catalog)
    if valued is not None:
        return replace(valued, base=base)
    if picked is not None and not _PROJECTION_WORDS.sub("", _NTH.sub("", question)):  # "the second one?"
        return as_operation(
            picked, base=base, catalog=catalog, how=f"the record {picked.filters[-1].value} of the last answer"
        )
    if picked is not None and followup.record:  # the record named, and words said of it that no rule reads
        unsaid = [{"text": question, "start": 0, "end": 0, "how": "unknown"}]
        return as_operation(picked, base=base, catalog=catalog, how=f"the record {followup.record}", unread=unsaid)
    dropped = _dropped(question, base, catalog, now)
    if dropped is not None:
        return as_operation(dropped, base=dropped, catalog=catalog, how="the last plan without that condition")
    counted = _replies_counted(question, base, catalog) or _person_counted(question, turns[-1], base, catalog)
    if counted is not None:
        return counted
    records, base = base, _asked_again(followup, turns[-1], base)
    changed, shape_said = base, False
    how: list[str] = []
    unread: list[dict[str, Any]] = []
    if followup.person:  # "what about Priya?": the same plan about someone else
        switched = _person_switched(base, followup.person, catalog)
        if switched is None:
            return None
        changed = switched
        how.append(f"its person replaced by {followup.person}")
    if followup.within is not None:  # "those" after "which label is the biggest": that label's records
        field, key = followup.within
        kept = [f for f in base.filters if f.field != field]
        listed = reshaped_as("list", base, schema) or base.shape  # a list is always a shape
        changed = replace(base, filters=[*kept, Filter(field, "eq", key)], shape=listed)
        how.append(f"the records with {field} {key}")
    if followup.restated and (any(f.field == "ref" for f in base.filters) or base.shape.limit == 1):
        return None  # a question of its own after one record ("who's the author?" then "how many did they open")
    if followup.restated and _IN_TOTAL.search(followup.restated):
        return None  # "how many messages in total did he write": all of them, not the last plan's narrower ones
    words = followup.added or followup.restated
    if words:
        before = changed
        narrowed = narrowed_by(changed, words, catalog, asker, now, values, followup.standalone, followup.replacing)
        if narrowed is None:
            failed = _unknown_in(words, changed.collection, catalog, asker, now, values)
            return None if failed is None else Operation(None, base, f"{failed.unresolved!r}: no such", declined=failed)
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
        shape = reshaped_as(followup.reshape, changed, schema)
        if shape is None:
            return None
        changed = replace(changed, shape=shape)
        said = {"count": "counted", "list": "listed"}.get(followup.reshape, f"counted per {followup.reshape}")
        how.append(f"its records {said}")
    if not how:
        return None
    # the same question asked again of other records: the next follow-up builds on those records, as on the last
    builds_on = changed if base is records else replace(changed, shape=records.shape)
    return as_operation(changed, base=builds_on, catalog=catalog, how="; ".join(how), unread=unread)


def _asked_again(followup: FollowUp, turn: dict[str, Any], base: PlanIR) -> PlanIR:
    """What "the same question" about another person or time changes: the plan the last turn ran when it picked
    the one record at an end of its base's records ("哪一个留言最多" then "sanchit-gandhi 的呢？": the most commented of
    his) or totalled a measure over them ("how many replies did they get altogether?" then "April?": April's total),
    not the records it was about; any other change builds on the base ("the week before, how many?")."""
    said_more = followup.added or followup.reshape or followup.within or followup.restated
    ran_data = (turn.get("plan") or {}).get("ir")
    if not (followup.person or followup.new_time) or said_more or not ran_data:
        return base
    ran = PlanIR.from_json(ran_data)
    picked = ran.shape.kind == "list" and ran.shape.limit == 1 and bool(ran.shape.sort)
    picked = picked or (ran.shape.kind in ("sum", "avg") and ran.pipeline is None)
    same_records = (ran.collection, ran.filters, ran.times, ran.text) == (
        base.collection,
        base.filters,
        base.times,
        base.text,
    )
    return ran if picked and same_records and ran != base else base


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
    return as_operation(switched, base=switched, catalog=catalog, how=how)


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


def as_operation(
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


def _projection(
    question: str, base: PlanIR, catalog: Catalog, picked_already: bool = False, before: str = ""
) -> Operation | None:
    """ "who opened the earliest one?", "when was the top one merged?": a person or a date of one record of
    the last plan's records (`picked_already`: `base` is that one record, "the second one" of the last answer).
    Words of the last question `before` said again name those records ("这些 draft 里最早的那个是谁开的")."""
    schema = catalog.schemas[base.collection]
    who, when = _WHO.search(question), _WHEN.search(question)
    said = _NTH.sub("", question) if picked_already else question
    rest = _PROJECTION_WORDS.sub(" ", said).split()
    restated = set(re.findall(r"[a-z][\w-]*", before.lower()))
    if (who is None and when is None) or any(w.lower() not in restated for w in rest):
        return None
    one = base.shape if picked_already else _one_record(question, base, schema)
    if one is None:
        return None
    picked = replace(base, shape=one)
    if when is not None or who is None:  # the date itself, on the record that has it
        verb = (when.group("verb") or when.group("cverb")).lower() if when else ""
        date = field_for(schema, _DATE_ROLES.get(verb, "created"))
        if date is None:
            return None
        shown = replace(picked, shape=replace(one, fields=[date]))
        return as_operation(shown, base=base, catalog=catalog, how=f"the {date} of one record")
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
    return as_operation(ir, base=base, catalog=catalog, how=f"the {path} of one record", person_field=(path, kind))


# "who replied in it the most?", "谁在那个帖子里回复最多": the people of one thread's replies, ranked
_WHO_REPLIED_IN_IT = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then)[\s,]+)?who\s+(?:replied|responded|answered|posted)\s+(?:in|on|to)\s+"
    r"(?:it|that(?:\s+(?:one|thread))?|this(?:\s+(?:one|thread))?|the\s+thread)\s+(?:the\s+)?most(?:\s+often)?$"
    r"|^(?:那个帖子里|这个帖子里|里面|其中)?谁(?:在(?:那个|这个)?(?:帖子|讨论串)?里)?回复(?:得)?最多(?:的)?$",
    re.I,
)
# A message's own list of its replies, each with its author: the Slack export's thread
_REPLY_AUTHORS = "replies.user"


def _repliers_in_one(question: str, base: PlanIR, catalog: Catalog) -> Operation | None:
    """The people who replied in the one thread the last answer was, by how many replies each wrote."""
    schema = catalog.schemas[base.collection]
    one = base.shape.limit == 1 or (base.shape.kind in ("argmin", "argmax") and base.shape.over == "records")
    if not _WHO_REPLIED_IN_IT.match(question.strip(" ?？.。!！")) or base.shape.kind not in RECORD_SHAPES or not one:
        return None
    author = person_field_for(schema, "author")  # a reply's author is the same kind of account
    if not schema.has_path(_REPLY_AUTHORS) or author is None:
        return None
    array = _REPLY_AUTHORS.split(".")[0]
    pipeline = [
        *compile_plan(base, schema, catalog.schemas),
        {"$unwind": f"${array}"},
        {"$group": {"_id": f"${_REPLY_AUTHORS}", "count": {"$sum": 1}}},
        {"$sort": {"count": -1, "_id": 1}},
        {"$limit": 5},
    ]
    return as_operation(
        replace(base, pipeline=pipeline),
        base=base,
        catalog=catalog,
        how="the people who replied in that thread, by their replies",
        person_field=(_REPLY_AUTHORS, author[1]),
    )


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


# "the second one", "第三条": which record of the last answer (the follow-up says it: `FollowUp.nth`)
_NTH = re.compile(
    r"\b(?:first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\b|第(?:一|二|两|三|四|五|[1-9])(?:个|条|篇|项)?"
    r"|最后一(?:个|条|篇|项)",
    re.I,
)


def _picked(followup: FollowUp, previous: dict[str, Any], base: PlanIR) -> PlanIR | None:
    """The one record of the last answer a follow-up names by its place ("the second one", 第三条): the last
    plan's records, that one kept by its key; or the one it names by its subject or number (`FollowUp.record`),
    listed or not: that record of the last plan's kind alone."""
    if followup.record:
        fields = list(base.shape.fields) if base.shape.kind in RECORD_SHAPES else []
        return PlanIR(
            base.collection, [Filter("ref", "eq", followup.record)], shape=Shape("list", fields=fields, limit=1)
        )
    refs = previous.get("refs") or []
    if followup.nth is None or base.shape.kind not in RECORD_SHAPES or not -len(refs) <= followup.nth < len(refs):
        return None
    kept = [f for f in base.filters if f.field != "ref"]
    one = Shape("list", fields=list(base.shape.fields), limit=1)
    return replace(base, filters=[*kept, Filter("ref", "eq", refs[followup.nth])], shape=one)


# "it", "that one", 它, 那条 (not 那个月, 那个人): one record
_IT = re.compile(r"\bit\b|\b(?:that|this)\s+one\b|它(?!们)|(?:那|这)(?:个|条)(?![月人年周天时位])", re.I)


def _the_record_before(question: str, previous: dict[str, Any]) -> PlanIR | None:
    """ "it" after an answer about one record of a list (the record picked by its place, subject or number): that
    record, not the list the next follow-up otherwise builds on."""
    ran = (previous.get("plan") or {}).get("ir")
    if not ran or not previous.get("listed") or not _IT.search(question):
        return None
    keys = [f for f in PlanIR.from_json(ran).filters if f.field == "ref" and f.op == "eq" and not f.negate]
    if len(keys) != 1:
        return None
    return PlanIR(ran["collection"], [keys[0]], shape=Shape("list", limit=1))


# "the one about parallel downloads — how many comments did it get?", "the one on caching: who opened it": the
# one record of the last answer about that, and the rest said of it
_THE_ONE_ABOUT = re.compile(
    r"^(?:(?:and|ok(?:ay)?|so)[\s,]+)?(?:what\s+about\s+)?the\s+one\s+(?:about|on|titled|called|mentioning)\s+"
    r"(?P<topic>[^—–:;,]+?)\s*(?:[—–:;,]|\s-\s)\s*(?P<rest>\S.*)$",
    re.I,
)


def _picked_by_topic(
    topic: str, base: PlanIR, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> PlanIR | None:
    """The one record of the last plan's about a topic, the topic read as the planner reads one said of that
    kind of record ("pull requests about X")."""
    if base.shape.kind not in RECORD_SHAPES:
        return None
    noun = catalog.schemas[base.collection].kind.plural
    own = _planned_alone(f"{noun} about {topic}", base.collection, catalog, asker, now, values)
    if own is None or own.ir is None or own.not_understood:
        return None
    said = own.ir
    words = [f for f in said.filters if f.op in WORD_OPERATORS]
    if not (words or said.text) or len(words) != len(said.filters) or said.times:
        return None  # something else than a topic
    one = Shape("list", sort=list(base.shape.sort), fields=list(base.shape.fields), limit=1)
    return replace(base, filters=[*base.filters, *words], text=[*base.text, *said.text], shape=one)


# "how many comments was that?", "how many replies did it get", "what priority was it given?", "what's its
# state", "它有多少评论", "有多少条评论" (a measure word before the noun), "那条的回复数是多少": a field of the one record the last answer was (or the follow-up
# picked)
_ONE_RECORD = r"thread|message|post|pr|pull\s+request|issue|ticket"  # "how many replies did that thread get"
_FIELD_OF_ONE = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then|but)[\s,]+|那么?|还有)*(?:"
    r"how\s+many\s+(?P<many>[\w\s-]+?)\s+(?:was|were|is|are)\s+(?:that|it|there)(?:\s+(?:one|on\s+it|then))?"
    rf"|how\s+many\s+(?P<got>[\w\s-]+?)\s+(?:did|does|has|had)\s+(?:it|(?:that|this)(?:\s+(?:one|{_ONE_RECORD}))?|the(?:\s+\w+)?\s+one)\s+"
    r"(?:get|got|have|had|receive|draw|collect|attract)(?:\s+in\s+the\s+end)?"
    r"|what\s+(?P<what>[\w\s-]+?)\s+(?:was|is|did|does)\s+(?:it|that(?:\s+one)?|this(?:\s+one)?)\s*"
    r"(?:given|assigned|set\s+to|marked(?:\s+as)?|labell?ed|tagged|have|get|carry|rated|in)?"
    r"|what(?:'s|’s|\s+is|\s+was)\s+(?:its|the)\s+(?P<its>[\w\s-]+?)(?:\s+of\s+(?:it|that(?:\s+one)?))?"
    r"|(?:它|那个|这个|那条|这条)?(?:的|有|得到了|收到了|拿到了)(?:(?:多少|几|幾)(?:个|個|条|條|则|則)?)?(?P<cjk>\w+?)(?:数)?(?:是|有)?(?:多少|什么|几(?:个|条))?"
    r")$",
    re.I,
)
_FIELD_SYNONYMS = {
    "评论": "comments",
    "留言": "comments",
    "回复": "replies",
    "反应": "reactions",
    "discussion": "comments",
    "reply": "replies",
    "号": "number",
    "编号": "number",
    "号码": "number",
}
# what a record is, not a field of it ("what kind was it", "what time was it merged" is a date: `_WHEN`)
_NOT_A_FIELD = frozenset({"kind", "sort", "type", "time", "one", "day", "date", "year", "month", "about", "of"})


# "why were they never merged?", "how come so many that month?", "它为什么被关掉了", "为什么她发得这么少": the cause of
# what the last answer showed, pointed at ("they", "that month", 她)
_WHY = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|then)[\s,]+)*(?P<en>why|how\s+come|what(?:'s|’s|\s+is|\s+was)\s+the\s+reason|for\s+what\s+reason)"
    r"(?:'s|’s)?\b|(?P<cjk>为什么|为何|为啥|怎么会|怎么这么|怎么那么|什么原因)",
    re.I,
)
_POINTS_BACK = re.compile(
    r"\b(?:it|they|them|those|these|that|this|she|he|her|him|his|their|so\s+(?:many|few|much|little|long|often))\b"
    r"|它|她|他|这|那",
    re.I,
)
_CLOSED = re.compile(r"\bclos(?:e|ed|ing)\b|关掉|关闭|关了|被关", re.I)
WHY_REFUSAL = (
    "Nothing in the records says why: they hold what happened (who, when, states, counts, text), and no field "
    "gives a reason for it; I would only be guessing."
)


def _why(question: str, base: PlanIR, catalog: Catalog) -> Operation | None:
    """Why something the last answer showed is so. The records hold one reason: why an issue was closed (its
    `state_reason`: completed, not planned), shown for the one record the last answer was; anything else is
    declined, naming the question word, rather than answered with the records again or a guess."""
    said = _WHY.search(question)
    if said is None or not _POINTS_BACK.search(f"{question[: said.start()]} {question[said.end() :]}"):
        return None
    schema = catalog.schemas[base.collection]
    reason = _field_named("state_reason", schema)
    if _CLOSED.search(question) and reason and base.shape.kind in RECORD_SHAPES and _one_record_plan(base):
        return replace(_value_of_one(base, reason, catalog), how=f"why the one record was closed: its {reason}")
    word = (said.group("en") or said.group("cjk")).lower()
    return Operation(None, base, f"{word!r}: no record says why", unanswerable=word, refusal=WHY_REFUSAL)


def _field_of_one(question: str, base: PlanIR, catalog: Catalog) -> Operation | None:
    """A field of the one record the last plan picked, shown; a field its kind does not have is said so (the
    follow-up is declined, not answered with the whole record)."""
    asked = question.strip(" ?？.。!！")
    said = _FIELD_OF_ONE.match(asked) or _FIELD_ALONE.match(asked)
    if said is None and _STATE_OF_ONE.match(asked):  # "is it still open?", "现在是开着还是关了"
        word = "state"
    elif said is not None:
        word = " ".join(next(g for g in said.groups() if g).lower().split())
    else:
        return None
    if base.shape.kind not in RECORD_SHAPES or not _one_record_plan(base):
        return None
    if word in _NOT_A_FIELD:
        return None
    schema = catalog.schemas[base.collection]
    path = _field_named(_FIELD_SYNONYMS.get(word, word), schema)
    if path is None:
        return Operation(None, base, f"{word!r} of one record: no field holds it", unanswerable=word)
    return _value_of_one(base, path, catalog)


def _one_record_plan(ir: PlanIR) -> bool:
    """The plan's answer is one record: cut to one, or the record with the most or least of something."""
    return ir.shape.limit == 1 or (ir.shape.kind in ("argmin", "argmax") and ir.shape.over == "records")


def _value_of_one(one: PlanIR, path: str, catalog: Catalog) -> Operation:
    """A field of the one record `one` is: a number shown with the record, a value (a state, a reason, a name) as
    the one group it is (as the person of a record is)."""
    schema = catalog.schemas[one.collection]
    info = schema.fields.get(path)
    if info is not None and not info.in_array and info.types - {"null"} <= {"string", "bool"}:
        pipeline = [*compile_plan(one, schema, catalog.schemas), {"$group": {"_id": f"${path}", "count": {"$sum": 1}}}]
        return as_operation(replace(one, pipeline=pipeline), base=one, catalog=catalog, how=f"the {path} of one record")
    shown = replace(one, shape=replace(one.shape, fields=[path]))
    return as_operation(shown, base=one, catalog=catalog, how=f"the {path} of one record")


# "how many comments?", "how many replies on it?", "评论多少" said of the one record the last answer was (or the follow-up
# picked)
_FIELD_ALONE = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then|but)[\s,]+)*how\s+many\s+(?P<alone>comments|replies|reactions)"
    r"(?:\s+(?:on|in|for|under|to)\s+(?:it|that(?:\s+one)?|this(?:\s+one)?))?(?:[\s,]+then)?$"
    r"|^(?:它|那个|这个|那条|这条)?(?P<cjk>评论|回复|留言|反应)(?:数)?(?:是|有)?(?:多少|几)(?:个|条|條|則|则)?$"
    # "是几号", "编号是多少": its number
    r"|^(?:它|那个|这个|那条|这条)?的?是?(?:几|多少|什么|哪个)(?P<num>编号|号码|号)$"
    r"|^(?:它|那个|这个|那条|这条)?的?(?P<num2>编号|号码)(?:是)?(?:多少|几号|什么)$",
    re.I,
)
# "is it still open?", "is that one open or closed", "现在是开着还是关了", "还开着吗": the state of the one record
_STATE_OF_ONE = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then|but)[\s,]+)*(?:is|was)\s+(?:it|that(?:\s+one)?|this(?:\s+one)?)\s+(?:still\s+)?"
    r"(?:open|closed)(?:\s+or\s+(?:open|closed))?(?:\s+(?:now|still|yet|then))?"
    r"|^(?:它)?(?:现在|目前|还)?(?:是)?(?:开着|打开着|开的|open)(?:的)?(?:还是|或者)(?:关了|关着|关闭了|关的|closed)(?:的)?(?:呢|吗)?"
    r"|^(?:它)?(?:现在|目前)?(?:还)?(?:开着|关着|关了)(?:吗|没有|没)$",
    re.I,
)


def _field_named(word: str, schema: Any) -> str | None:
    """The field a word names: a role's field ("comments", "state"), else the one field whose name says the
    same words ("reactions": `reactions.total_count`)."""
    found = field_for(schema, word) or field_for(schema, _singular(word))
    if found is not None or schema.has_path(word):
        return found or word
    words = {_singular(w) for w in re.split(r"[\s_-]+", word) if w}
    named = [
        path
        for path in schema.fields
        if {_singular(w) for w in re.split(r"[._\s-]+", path.lower()) if w not in ("total", "count")} == words
    ]
    return named[0] if len(named) == 1 else None


def _singular(word: str) -> str:
    return re.sub(r"ies$", "y", word) if word.endswith("ies") and len(word) > 4 else re.sub(r"(?<=\w{3})s$", "", word)


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
    return as_operation(counted, base=counted, catalog=catalog, how=f"the last plan's records of {who}, counted")


# "how many replies did she get from others in total", "how many replies did Carlyn get that month": after a
# plan of the replies to one person, those replies counted
_REPLIES_GOT = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|then)[\s,]+)?how\s+many\s+(?:replies|responses|answers)\s+(?:did|does|has|have|had)\s+"
    r"(?P<who>.+?)\s+(?:get|got|gotten|receive|received)"
    r"(?:\s+(?:from\s+(?:others|other\s+people|anyone\s+else|everyone\s+else)|in\s+total|overall|altogether|all\s+told"
    r"|in\s+all|(?:in\s+)?that\s+(?:month|year|week|day)|then|there))*$",
    re.I,
)


def _replies_counted(question: str, base: PlanIR, catalog: Catalog) -> Operation | None:
    """The replies to one person the last plan was about, counted, when the follow-up asks how many replies
    that person got (a sum of their threads' reply counts would count their own replies too)."""
    said = _REPLIES_GOT.match(question.strip(" ?？.。!！"))
    schema = catalog.schemas[base.collection]
    replied_to = person_field_for(schema, "replied_to")
    if said is None or replied_to is None:
        return None
    to = [f for f in base.filters if f.field in (replied_to[0], "replied_to") and f.op == "eq" and not f.negate]
    if len(to) != 1:
        return None
    who = said.group("who").strip()
    if not _PERSON_PRONOUN.match(who):
        person = _one_person(who, catalog)
        if person is None or person.handle(replied_to[1]) != to[0].value:
            return None  # someone else's replies: a question of its own
    counted = replace(base, shape=Shape("count"))
    return as_operation(counted, base=counted, catalog=catalog, how="the replies to that person, counted")


def _person_switched(base: PlanIR, name: str, catalog: Catalog) -> PlanIR | None:
    """The last plan about someone else ("what about Priya?", "换成张伟"): each condition on the one person
    it was about, on any person field ("by X", "replies to X", "not X"), put on the new person's handle
    there. None: no one person to replace, or a new person the directory does not know as one (the
    rewritten question is resolved, and declined with candidates like a first question)."""
    schema = catalog.schemas[base.collection]
    new = _one_person(name, catalog)
    if new is None:
        return None
    people = {}  # filter index -> handle kind, for the conditions on a person
    for i, f in enumerate(base.filters):
        kind = _handle_kind(f.field, schema) or _handle_kind((person_field_for(schema, f.field) or ("",))[0], schema)
        if kind is not None:
            people[i] = kind
    held: dict[int, str] = {}  # filter index -> the person its value is ("exists" and the like are no one)
    for i, kind in people.items():
        value = base.filters[i].value
        for p in catalog.directory.people:
            if value == p.handle(kind) or (isinstance(value, list) and value == [p.handle(kind)]):
                held[i] = p.key
    if len(set(held.values())) != 1 or new.key in held.values():
        return None  # about nobody, or several people: which one is replaced is not said
    filters = list(base.filters)
    for i, kind in people.items():
        if i not in held:
            continue
        handle = new.handle(kind)
        if handle is None:
            return None  # the new person has no account of that kind: nothing of theirs to look for
        filters[i] = replace(filters[i], value=[handle] if isinstance(filters[i].value, list) else handle)
    return replace(base, filters=filters)


def _one_person(name: str, catalog: Catalog) -> Person | None:
    found = [m.person for m in catalog.directory.find_mentions(name) if m.person is not None and not m.is_asker]
    return found[0] if len({p.key for p in found}) == 1 else None


def _role_of(path: str, schema: Any) -> str:
    """The role a person path fills ("user.login": "author"), as a filter may name it."""
    return next(
        (role for role, fields in schema.kind.people_roles().items() if any(p == path for p, _ in fields)), path
    )


def _dropped(question: str, base: PlanIR, catalog: Catalog, now: datetime) -> PlanIR | None:
    """ "any state", "all labels": the last plan without that condition (None: it has none)."""
    said = _DROP.match(question.strip(" ?？.。!！"))
    if said is None:
        return None
    kept = _without_said(said.group("any"), base, catalog, None, now, None, by_value=False)
    return kept if kept != base else None


# The words of a condition taken away ("drop the bug label", "forget open or closed", 不管评论数), by what they
# name: the fields of those roles (or paths) leave the plan; a time word takes the window away, a topic word the
# words searched for
_GONE_TIME = re.compile(
    r"\b(?:years?|months?|weeks?|days?|quarters?|dates?|time|times|period|window|when)\b|时间|月份|年份|日期|[年月周天]",
    re.I,
)
_GONE_ANYONE = re.compile(
    r"\b(?:anyone|anybody|everyone|everybody)\b|所有人|任何人|大家|每个人|不管是谁|不论是谁", re.I
)
_GONE_TOPIC = re.compile(r"\b(?:topic|subject|keywords?|search|words?)\b|话题|主题|关键词", re.I)
_GONE_ROLES = (
    (re.compile(r"\blabel(?:s|led|ed)?\b|标签", re.I), ("label",)),
    (re.compile(r"\b(?:open|closed|state|status)\b|状态|开着|关着|关闭", re.I), ("state", "status")),
    (re.compile(r"\b(?:merged|unmerged)\b|合并", re.I), ("merged",)),
    (re.compile(r"\bcomments?\b|评论", re.I), ("comments",)),
    (re.compile(r"\brepl(?:y|ies)\b|回复|人回|回帖", re.I), ("replies",)),
    (re.compile(r"\b(?:author|person|people|users?|him|her|them|anyone|everyone)\b|作者", re.I), ("author",)),
    (re.compile(r"\brepo(?:sitory|s)?\b|仓库", re.I), ("repo",)),
    (re.compile(r"\bworkspaces?\b|工作区", re.I), ("workspace",)),
    (re.compile(r"\bchannels?\b|频道", re.I), ("channel",)),
)
# "drop that", "forget this": the condition the last turn added to the one before it
_GONE_THAT = re.compile(
    r"^(?:the\s+)?(?:that|this|it|those|them)(?:\s+(?:one|part|bit|filter|condition))?$|^(?:那个|这个)$", re.I
)


def without(
    words: str,
    operation: Operation | None,
    turns: list[dict[str, Any]],
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
    rest: str = "",
) -> Operation | None:
    """The condition `words` name taken away ("drop that — which are still open?", "forget the year", 不管评论数)
    from the plan the rest of the follow-up made (`operation`; None: the last plan, narrowed by the `rest` said
    after them as a question of its own: "drop the topic — how many issues in 2024 overall?"). None: the words
    name no condition of that plan, and the follow-up says so."""
    base = base_of(turns[-1]) if turns else None
    ir = operation.plan.ir if operation is not None and operation.plan is not None else base
    if ir is None or base is None or ir.collection not in catalog.schemas:
        return None
    said = words.strip().lower()
    if _GONE_THAT.match(said):
        earlier = base_of(turns[-2]) if len(turns) > 1 else None
        if earlier is None:
            return None
        had = {_key(f) for f in earlier.filters}
        added = {_key(f) for f in base.filters} - had
        kept = replace(ir, filters=[f for f in ir.filters if _key(f) not in added])
        kept = replace(kept, text=[t for t in ir.text if t in earlier.text or t not in base.text])
        if base.times != earlier.times and not added:
            kept = replace(kept, times=earlier.times)
    else:
        kept = _without_said(said, ir, catalog, asker, now, values)
    if kept == ir:
        return None
    unread = operation.plan.not_understood if operation is not None and operation.plan is not None else []
    how = operation.how if operation is not None else "the last plan without that condition"
    if operation is None and rest:
        narrowed = narrowed_by(kept, rest, catalog, asker, now, values)
        if narrowed is not None:  # else the rest reads as nothing more ("and all of them, open or not?")
            kept, unread = narrowed
            how = f"the last plan without that condition, narrowed by {rest!r}"
    return as_operation(kept, base=kept, catalog=catalog, how=how, unread=unread)


def _key(f: Filter) -> str:
    return f"{f.field}\x00{f.op}\x00{f.value!r}\x00{f.negate}"


def _without_said(
    said: str,
    ir: PlanIR,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
    by_value: bool = True,
) -> PlanIR:
    """`ir` without the conditions `said` names by their kind (`by_value`: or by a value of theirs)."""
    schema = catalog.schemas[ir.collection]
    gone: set[str] = set()
    for words, roles in _GONE_ROLES:
        if words.search(said):
            gone |= set(roles) | {p for role in roles for p in (field_for(schema, role),) if p}
            gone |= {p for role in roles for p, _ in schema.kind.people_roles().get(role, ())}
    kept = replace(ir, filters=[f for f in ir.filters if f.field not in gone])
    if _GONE_ANYONE.search(said):  # "from anyone, not just him": whoever the plan was about
        people = {p for fields in schema.kind.people_roles().values() for p, _ in fields} | set(
            schema.kind.people_roles()
        )
        kept = replace(kept, filters=[f for f in kept.filters if f.field not in people])
    if _GONE_TIME.search(said):
        kept = replace(kept, times=[])
    topic = bool(_GONE_TOPIC.search(said))
    if kept == ir and not topic and by_value:
        # a word the plan searches for, said back ("drop the macro part" after threads about macros)
        said_words = {w.rstrip("s") for w in re.findall(r"[a-z0-9_\-]+|[\u4e00-\u9fff]+", said)}
        searched = [f for f in ir.filters if f.op in WORD_OPERATORS and isinstance(f.value, list)]
        if any(str(w).lower().rstrip("s") in said_words for f in searched for w in f.value):
            topic = True
    if kept == ir and not topic and by_value:
        # words that name a value rather than a kind of condition ("the macro part", "the bug label"): the
        # conditions the plan has on the fields those words are read as, a topic's words all
        alone = _planned_alone(
            re.sub(r"\b(?:the|part|bit|filter|condition|stuff)\b", " ", said),
            ir.collection,
            catalog,
            asker,
            now,
            values,
        )
        if alone is not None and alone.ir is not None:
            fields = {f.field for f in alone.ir.filters if f.op not in WORD_OPERATORS}
            kept = replace(ir, filters=[f for f in ir.filters if f.field not in fields])
            topic = bool(alone.ir.text or any(f.op in WORD_OPERATORS for f in alone.ir.filters))
    if topic:
        kept = replace(kept, text=[], filters=[f for f in kept.filters if f.op not in WORD_OPERATORS])
    return kept


# "which was busiest?", "what was the biggest one": an extreme said of nothing named, after records per period
_BARE_EXTREME = re.compile(
    r"^(which|what)\s+(?:one\s+)?(?=(?:was|is|were|had)\s+(?:the\s+)?(?:busiest|biggest|largest|quietest|slowest|"
    r"most\s+active|most|fewest|least|highest|lowest|top)\b)",
    re.I,
)


def narrowed_by(
    base: PlanIR,
    words: str,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
    standalone: str = "",
    replacing: bool = False,
) -> tuple[PlanIR, list[dict[str, Any]]] | None:
    """The follow-up's words planned over the last plan's kind of record, added to it (`standalone`: the
    follow-up rewritten whole, where a topic is read as in a question of its own; `replacing`: each field the
    words name replaces the last plan's conditions on it, as "instead" says, even a field holding several:
    `FollowUp.replacing`)."""
    if base.shape.kind == "group" and base.shape.bucket and _BARE_EXTREME.match(words):
        # "which was busiest?" after messages per month: which month (not who, as "busiest" alone reads)
        words = _BARE_EXTREME.sub(lambda m: f"{m.group(1)} {base.shape.bucket} ", words, count=1)
    own = _planned_alone(words, base.collection, catalog, asker, now, values)
    if own is None or own.ir is None:
        return None
    said = own.ir
    if said.text or any(f.op in WORD_OPERATORS for f in said.filters):
        # a topic ("any of those about streaming?", 其中有讲 parquet 的吗): its condition as the planner reads it in
        # the whole rewritten question (a search, or words of a title, as the other conditions make it)
        whole = _planned_alone(standalone, base.collection, catalog, asker, now, values) if standalone else None
        if whole is None or whole.ir is None:
            return None
        topic = [f for f in whole.ir.filters if f.op in WORD_OPERATORS]
        said = replace(
            said, text=whole.ir.text, filters=[*(f for f in said.filters if f.op not in WORD_OPERATORS), *topic]
        )
        if not (said.text or topic):
            return None
    shape_said = said.shape.span is not None or said.shape.kind != "list" or says_a_shape(words)
    if not (said.filters or said.times or said.text or shape_said):
        return None  # nothing read: the rewritten question is planned whole, and says what it did not read
    schema = catalog.schemas[base.collection]
    # a new value of a field that holds one replaces the old ("only lhoestq's"); a label is one more, unless
    # `replacing` — and unless the last plan's condition on it already says more: "这样的帖子一共有几个" after threads
    # with over 20 replies reads 帖子 as threads (1+ replies), which those are
    implied = [f for f in said.filters if any(implies(b, f, schema) for b in base.filters)]
    said = replace(said, filters=[f for f in said.filters if f not in implied])
    same = {f.field for f in said.filters if replacing or not _holds_many(schema, f.field)}
    shape = said.shape if shape_said else base.shape
    if shape.kind == "share":
        # the share's part is asked over the records without it: "what fraction of his PRs got merged" after his
        # unmerged ones is over all of his PRs
        same |= {f.field for f in shape.part}
    if (
        shape_said
        and shape.field
        and not shape.bucket
        and shape.kind in ("group", "argmax", "argmin", "distinct_count")
    ):
        # "who posted the most in racket that year?" after Ruthe's count: a ranking of people is over everyone's
        # records, not one person's (a ranking of the one value the last plan kept answers nothing); several
        # kept ("which of them posted most") stay
        same |= {f.field for f in base.filters if f.field == shape.field and f.op == "eq"}
    filters = [f for f in base.filters if f.field not in same] + list(said.filters)
    if shape_said and shape.bucket and (base.shape.bucket or base.times):
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


def _unknown_in(
    words: str, collection: str, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> engine.ResolutionFailed | None:
    """The refusal of words a follow-up adds that name a value nobody has ("the performance label"), when that is
    why they cannot be planned; None for anything else. A person nobody has, or several have, is left to the
    rewritten question, which declines with candidates the next turn can pick from."""
    ctx, failed = engine.resolve(words, now, catalog, asker, values=values)
    if failed is not None or ctx is None:
        return None
    ctx.collection = collection
    failed = engine.unknown_value(OfflinePlanner().plan(ctx), ctx, values)
    if failed is None or not failed.unresolved or failed.unresolved not in words:
        return None
    return failed


def _planned_alone(
    words: str, collection: str, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> Plan | None:
    """The offline plan of `words` over that kind of record; None: no plan of it a follow-up can add."""
    ctx, failed = engine.resolve(words, now, catalog, asker, values=values)
    if failed is not None or ctx is None:
        return None
    ctx.collection = collection
    own = OfflinePlanner().plan(ctx)
    if own.ir is None or own.collection != collection or own.ir.pipeline is not None or own.ir.join:
        return None
    return own


def names_its_own_share(
    words: str, collection: str, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> bool:
    """The words, their possessives aside, are a whole share question ("what fraction of his PRs got merged": the
    part said), not a share of the last answer in a wider base ("what fraction of all of them is that")."""
    own = _planned_alone(
        re.sub(r"\b(?:his|her|their|its)\b", " ", words, flags=re.I), collection, catalog, asker, now, values
    )
    return own is not None and own.ir is not None and own.ir.shape.kind == "share" and bool(own.ir.shape.part)


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


def reshaped_as(how: str, base: PlanIR, schema: Any) -> Shape | None:
    """The last plan's records counted, listed, or counted per period ("month": of the date it was about)."""
    if how == "count":
        return Shape("count")
    date = base.times[0].field if base.times else field_for(schema, "created")
    if how in BUCKETS:
        return Shape("group", field=date, bucket=how) if date else None
    if base.shape.kind == "list":
        return base.shape
    return Shape("list", sort=[SortKey(date, -1)] if date else [], limit=DEFAULT_LIMIT)

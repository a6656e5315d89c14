"""Nested questions: one answer feeds the next ("the person who opened the most issues in 2022 — how many of
their PRs were merged that same year?", "in elmlang's busiest month of 2019, who posted the most?").

The question is cut into an inner part that names a person or a period by an extreme ("whoever …the most",
"the top X of …", "2021's most prolific PR author", "…'s busiest month", "…最多的那位") and an outer part that
refers to it ("they", "their", "that month", "that same year", 那年, or nothing at all when the inner part is
the outer one's subject or its time: "in <the busiest month>, who …"). Each part is planned by the ordinary
offline steps over the question with the other part blanked out (spaces: every span keeps its offsets), the
outer one with a stand-in for what the inner one will find — a person in the referring words' place, or a
period — so that its own rules pick the role or the date the result fills. The plan is the outer one with
the inner one as its `PlanIR.nested`: the inner ranking (a person group, or a day/week/month/year bucket)
runs first, and its top result is bound into the outer plan when it ran (`compile.bind`).

A question cut so whose inner part is no ranking of people or periods is not nested (the ordinary plan
answers it), nor one whose rest reads as nothing and says no "they" or "that month"; one that says it and
whose rest reads as nothing says so, never answering the inner part alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from context_engine.query.compile import BUCKET_FORMATS, compile_plan
from context_engine.query.identity import Mention, Person
from context_engine.query.ir import Nested, PlanIR, Shape
from context_engine.query.plan import Plan, PlanningContext
from context_engine.query.timeexpr import TimeRange

# How much of the inner ranking is read: the first row is bound, the rows level with it are the tie.
TIE_ROWS = 10
# The words that introduce a person as the one who did something: planned as "who" ("whoever posted the
# most" is "who posted the most"), the rest of them only glue.
_INTRO = re.compile(
    r"\b(?:who(ever)\b|(?:the|that)\s+(?:person|one|user|member|guy|contributor|author)\s+(?=who\b))", re.I
)
_PREPOSITION = re.compile(r"^(?:in|during|for|of|on|at)\s+", re.I)
# What the outer plan holds in the place of the person the inner step will find; `bind` replaces it.
STAND_IN = "\x00the person the first step finds"

_EXTREME = re.compile(
    r"\b(?:most|top|busiest|quietest|fewest|least|highest|peak|prolific)\b|最多|最少|最活跃|最忙|最高",
    re.I,
)
# Where a question is cut: a colon, a dash between spaces, a semicolon, a comma, the end of a sentence
# before another one (either script).
_CUT = re.compile(r"\s*(?:[:：;；?？。]|\.(?=\s)|\s[-—–]\s|[—–]|[,，])\s*")
# Words before the inner part that only introduce it: "take …:", "so, …".
_LEAD = re.compile(r"^\s*(?:(?:so|ok|okay|now|and)\s*,?\s+)?(?:take|consider|look at|for)\s+", re.I)
# The inner part as the outer one's time: "in 2021's busiest month, who …", "在 … 的那个月".
_TIME_LEAD = re.compile(r"^\s*(?:in|during|within|over|for|在)\s*", re.I)
# The outer part's words for the inner's person ...
_PERSON_REF = re.compile(
    r"\b(?:they|them|their|theirs|he|him|his|she|her|hers)\b|\b(?:that|this|the same)\s+(?:person|user|member|author|"
    r"poster|one|guy|contributor)\b|那位|那个人|这个人|此人|这位|他们|她们|他|她",
    re.I,
)
# ... and for its period (or, after a person, for the period it was ranked over).
_PERIOD_REF = re.compile(
    r"\b(?:that|the same|that same|this|the said)\s+(?:day|week|month|year|period)\b"
    r"|那(?:一)?(?:年|个月|月|周|天)|当(?:年|月|天|周)|同(?:一)?(?:年|月|天|周)",
    re.I,
)
# The inner part naming its person ("whoever posted the most …", "the one who …", "2021 年开 PR 最多的那位"):
# it may be the outer part's subject. Asking who ("who were the three most active …") names no one.
_PERSON_TOPIC = re.compile(
    r"^\s*(?:whoever|(?:the|that)\s+(?:person|one|user|member)\s+who)\b"
    r"|(?:那位|那个人|的人|那人|person|one|author|poster|member|starter)\s*$",
    re.I,
)
# The inner part ending on its period ("2021 年合并 PR 最多的那个月"): it is the outer part's time, and the
# inner part asks which period that is (那 read as 哪).
_PERIOD_TOPIC = re.compile(r"那(?=(?:一)?个?(?:月|年|天|周|星期)\s*$)")
# An extreme person named inside the outer question: "did 2021's most prolific PR author open".
_EMBEDDED_PERSON = re.compile(
    r"(?:\b\d{4}['’]s|\bthe)\s+(?:single\s+)?(?:most\s+(?:prolific|active|productive)|top|busiest|biggest|leading)\s+"
    r"(?:[\w-]+\s+){0,3}?(?:author|poster|member|reviewer|contributor|starter|opener|merger|committer|person|user|"
    r"closer|commenter|participant|filer|reporter|submitter)s?\b"
    r"(?:\s+(?:of|in|during)\s+(?:[a-z]+\s+)?\d{4})?",
    re.I,
)

# The rest of a question around such a person asks something of them ("how many issues did … open"), and
# not who they are ("who was the single most active poster in May?" is the ranking itself).
_ASKS_OF_THEM = re.compile(
    r"\bhow (?:many|much|often|long)\b|\b(?:did|does|do|has|have|had|what|which|list|show)\b|几|多少", re.I
)
# "…, with their message counts?": the ranking's own counts shown, nothing asked of the people found
_THEIR_COUNTS = re.compile(
    r"\s*(?:(?:with|and|along with|plus|including|showing|giving)\s+)?(?:their|the|each one's|each)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:counts?|totals?|numbers?|tallies)\s*[?.!]?\s*$",
    re.I,
)
_ASKS_WHO = re.compile(r"\s*(?:who|whom|whose)\b|\s*谁", re.I)
# A rest that only says how much of the ranking to show, and its counts ("— top three and their numbers"):
# the ranking's own words, not a question about the person it finds.
_RANKING_AGAIN = re.compile(
    r"\s*(?:(?:just|only)\s+)?(?:the\s+)?(?:top|first|leading)\s+(?:\d+|[a-z]+)"
    r"(?:\s*(?:,|and|with|plus)\s+(?:their|the(?:ir)?)\s+(?:numbers?|counts?|totals?|tallies|figures))?\s*[?.!]?\s*",
    re.I,
)


@dataclass
class _Cut:
    inner: tuple[int, int]  # the words of the inner question
    refer: tuple[int, int] | None  # the outer words naming its result ("they", "that month"); None: implied
    glue: list[tuple[int, int]]  # words that only join the two ("take", the colon, "in")
    as_time: bool  # the inner part introduced as the outer's time ("in <the busiest month>, …")


def _cuts(q: str) -> list[_Cut]:
    """The ways the question may be an inner part and an outer one, most likely first."""
    found = []
    for sep in _CUT.finditer(q):
        left, right = q[: sep.start()], q[sep.end() :]
        if (
            not (_EXTREME.search(left) and right.strip())
            or _THEIR_COUNTS.match(right)
            or _RANKING_AGAIN.fullmatch(right)
        ):
            continue
        lead = _LEAD.match(left) or _TIME_LEAD.match(left)
        start = lead.end() if lead else len(left) - len(left.lstrip())
        glue = [(0, start)] if lead else []
        ref = _PERSON_REF.search(right) or _PERIOD_REF.search(right)
        refer = (sep.end() + ref.start(), sep.end() + ref.end()) if ref else None
        as_time = bool(lead and lead.re is _TIME_LEAD) or bool(_PERIOD_TOPIC.search(left))
        # without words pointing back, the rest must ask something of its own ("…, with counts?" does not)
        own = _ASKS_OF_THEM.search(right) or _ASKS_WHO.match(right)
        asks = refer or (own and (as_time or _PERSON_TOPIC.search(left) or _LEAD.match(left)))
        if asks:
            found.append(_Cut((start, sep.start()), refer, [*glue, sep.span()], as_time))
    for m in _EMBEDDED_PERSON.finditer(q):
        rest = q[: m.start()] + " " + q[m.end() :]
        if _ASKS_OF_THEM.search(rest) and not _ASKS_WHO.match(rest):
            found.append(_Cut(m.span(), None, [], False))
    return found


def _blank(q: str, keep: list[tuple[int, int]], drop: list[tuple[int, int]] | None = None) -> str:
    """The question with everything outside `keep`, and inside `drop`, turned to spaces: offsets stay."""
    return "".join(
        c if any(a <= i < b for a, b in keep) and not any(a <= i < b for a, b in drop or []) else " "
        for i, c in enumerate(q)
    )


def _within(start: int, end: int, span: tuple[int, int]) -> bool:
    return span[0] <= start and end <= span[1]


def _times_in(ctx: PlanningContext, text: str) -> list[TimeRange]:
    """The question's times said in this part: as many of each as the part says it ("in 2021" twice in the
    question, once in the part, is one condition of the part)."""
    low, found, taken = text.lower(), list[TimeRange](), list[tuple[int, int]]()
    for t in ctx.times:
        # "In 2021's busiest month, …": the preposition is the cut's, the year the inner part's
        for said in dict.fromkeys((t.text, _PREPOSITION.sub("", t.text))):
            at = next(
                (
                    m.start()
                    for m in re.finditer(re.escape(said.lower()), low)
                    if not any(m.start() < e and s < m.end() for s, e in taken)
                ),
                None,
            )
            if said and at is not None:
                taken.append((at, at + len(said)))
                found.append(replace(t, text=said))
                break
    return found


def _stand_in() -> Person:
    """A person with a handle of every kind, all of them the stand-in: the outer plan's person rules pick the
    role and field as for anyone named there."""

    class _Every(dict):
        def get(self, key, default=None):  # a handle of whatever kind is asked for
            return STAND_IN

    return Person(key=STAND_IN, name="the person the first step finds", handles=_Every())


def nested_plan(ctx: PlanningContext, build: Callable[[PlanningContext], Plan]) -> Plan | None:
    """The plan of a question whose one answer feeds the next, or None when it is not one."""
    q = ctx.question
    for cut in _cuts(q):
        plan = _nested(ctx, build, cut)
        if plan is not None:
            return plan
    return None


def _ranking(plan: Plan) -> tuple[str, Shape] | None:
    """What the inner plan ranks, as the slot it fills and the shape that reads the ranking: a person
    (a group by a person's field) or a period (the busiest/quietest day, week, month or year)."""
    ir = plan.ir
    if ir is None or ir.pipeline is not None or not plan.pipeline or ir.nested is not None:
        return None
    shape = ir.shape
    if shape.kind == "group" and shape.field and not shape.bucket and plan.person_field:
        return "person", Shape("argmax", field=shape.field, over="groups", limit=TIE_ROWS, span=shape.span)
    if shape.kind in ("argmax", "argmin") and shape.over == "groups" and shape.bucket in BUCKET_FORMATS:
        return "time", replace(shape, limit=TIE_ROWS)
    return None


def _nested(ctx: PlanningContext, build: Callable[[PlanningContext], Plan], cut: _Cut) -> Plan | None:
    q = ctx.question
    a, b = cut.inner
    inner_q = _blank(q, [cut.inner])
    for intro in _INTRO.finditer(inner_q):
        if not _within(*intro.span(), cut.inner):
            continue
        # "whoever" reads as "who", "the person who" as "who": the other letters blanked, the offsets kept
        gone = intro.span(1) if intro.group(1) else intro.span()
        inner_q = inner_q[: gone[0]] + " " * (gone[1] - gone[0]) + inner_q[gone[1] :]
        cut = replace(cut, glue=[*cut.glue, gone])
    topic = _PERIOD_TOPIC.search(inner_q[:b])
    if topic:
        inner_q = inner_q[: topic.start()] + "哪" + inner_q[topic.end() :]
    inner_ctx = replace(
        ctx,
        question=inner_q,
        mentions=[m for m in ctx.mentions if _within(m.start, m.end, cut.inner)],
        times=_times_in(ctx, inner_q),
        draft=None,
        previous=[],
    )
    inner = build(inner_ctx)
    ranked = _ranking(inner)
    if ranked is None:
        return None
    slot, shape = ranked
    assert inner.ir is not None
    inner_ir = replace(inner.ir, shape=shape)
    period = next(((t.start, t.end) for t in inner_ir.times), (None, None))

    # The outer question: the rest of it, the words that only join the two blanked too, and a stand-in
    # for what the inner part finds where the outer part refers to it.
    outer_q = _blank(q, [(0, a), (b, len(q))], drop=cut.glue)
    mentions = [m for m in ctx.mentions if not _within(m.start, m.end, cut.inner)]
    times = _times_in(ctx, outer_q)
    person_ref = _PERSON_REF.search(outer_q)
    period_ref = _PERIOD_REF.search(outer_q)
    stand_in_time: TimeRange | None = None
    if slot == "person":
        at = person_ref.span() if person_ref else cut.inner  # no "they": the inner part is the subject
        mentions.append(Mention(q[at[0] : at[1]], at[0], at[1], person=_stand_in()))
        if period_ref and period != (None, None):  # "that same year": the period the person was ranked over
            stand_in_time = TimeRange(period[0], period[1], period_ref.group(0))
    elif period_ref:
        at = period_ref.span()
        stand_in_time = TimeRange(period[0], period[1], period_ref.group(0))
    elif cut.as_time:  # "in <2021's busiest month>, who …": the inner part is the outer's time, said by its unit
        unit = next(reversed(list(re.finditer(r"\b(?:day|week|month|year)\b|年|月|周|天", q[a:b], re.I))), None)
        if unit is None:
            return None
        at = (a + unit.start(), a + unit.end())
        outer_q = outer_q[: at[0]] + q[at[0] : at[1]] + outer_q[at[1] :]
        stand_in_time = TimeRange(period[0], period[1], q[at[0] : at[1]])
    else:
        return None  # a period found, and nothing in the outer part dated by it
    if stand_in_time is not None:
        said = stand_in_time.text.lower()
        times = [t for t in times if t.text.lower() not in said and said not in t.text.lower()] + [stand_in_time]
    outer_ctx = replace(ctx, question=outer_q, mentions=mentions, times=times, draft=None, previous=[])
    outer = build(outer_ctx)
    return _joined(ctx, cut, inner, inner_ir, outer, slot, at, stand_in_time, outer_q)


def _joined(
    ctx: PlanningContext,
    cut: _Cut,
    inner: Plan,
    inner_ir: PlanIR,
    outer: Plan,
    slot: str,
    at: tuple[int, int],
    stand_in_time: TimeRange | None,
    outer_q: str,
) -> Plan | None:
    """The two plans as one: the outer plan with the inner one nested, its stand-in taken out again."""
    q = ctx.question
    ir = outer.ir
    field = None
    if ir is not None and ir.pipeline is None and outer.pipeline:
        if slot == "person":
            field = next((f.field for f in ir.filters if f.value == STAND_IN and f.op == "eq"), None)
            stood = [f for f in ir.filters if STAND_IN in (f.value if isinstance(f.value, list) else [f.value])]
            if len(stood) != 1:  # read in no role, or in more than one ("replies to them", not their own)
                field = None
            filters, times = [f for f in ir.filters if f not in stood], ir.times
        else:
            said_as = stand_in_time.text.lower() if stand_in_time else ""
            where = outer_q.lower().find(said_as) if said_as else -1
            stood_t = [t for t in ir.times if where >= 0 and t.span == (where, where + len(said_as))]
            field = stood_t[0].field if len(stood_t) == 1 else None
            if field and cut.as_time and at[0] >= cut.inner[0] and ir.collection == inner_ir.collection:
                # "in the month with the most merged PRs, whose …": the outer part says no date of its own, so
                # the period is of the date it was ranked by
                field = inner_ir.shape.field
            filters, times = ir.filters, [t for t in ir.times if t not in stood_t]
            if ir.collection == inner_ir.collection:
                # "in elmlang's busiest month, who posted the most": the month is elmlang's, and so are the posts
                said = {f.field for f in filters}
                filters = [*filters, *(f for f in inner_ir.filters if f.field not in said)]
    if field is None and cut.refer is None:
        return None  # nothing in the rest points back at the inner part: not a nested question after all
    if field is None:
        # The outer part refers to the inner result ("they", "that month") but reads as nothing it can fill:
        # said, never answered by the inner part alone.
        rest = [(m.start(), m.end()) for m in re.finditer(r"\S+", outer_q)]
        spans: list[dict[str, Any]] = [
            {"text": q[s:e], "start": s, "end": e, "how": "nested"} for s, e in rest if not _within(s, e, cut.inner)
        ]
        words = " ".join(s["text"] for s in spans)
        return replace(
            inner,
            confidence=min(inner.confidence, 0.3),
            notes=[*inner.notes, f"nested: the second step ({words!r}) could not be read"],
            not_understood=[*inner.not_understood, *spans],
        )
    assert ir is not None
    nested = Nested(inner_ir, slot, field, span=cut.inner)
    outer_ir = replace(ir, filters=filters, times=times, nested=nested)
    schema = ctx.schemas[outer.collection]
    glue = [
        {"text": q[s:e].strip(), "start": s, "end": e, "how": "nested"} for s, e in [*cut.glue, at] if q[s:e].strip()
    ]
    understood = [
        s
        for s in [*inner.understood, *outer.understood]
        if not (slot == "person" and s["how"] == "person" and _within(s["start"], s["end"], at))
    ]
    inner_words = q[cut.inner[0] : cut.inner[1]]
    return Plan(
        outer.collection,
        compile_plan(outer_ir, schema, ctx.schemas),
        confidence=min(inner.confidence, outer.confidence),
        planner="offline",
        notes=[
            (
                f"nested: first {inner_words!r} ({slot}: the top of {inner_ir.collection} by "
                f"{inner_ir.shape.field}), then the rest for it ({field})"
            ),
            *(f"first step: {n}" for n in inner.notes),
            *outer.notes,
        ],
        person_field=outer.person_field,
        collection_named=outer.collection_named or inner.collection_named,
        ir=outer_ir,
        understood=sorted([*understood, *glue], key=lambda s: (s["start"], s["end"])),
        not_understood=sorted([*inner.not_understood, *outer.not_understood], key=lambda s: (s["start"], s["end"])),
    )

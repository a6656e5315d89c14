"""The state of an offline plan being built: the question, the words already explained, the IR's
conditions so far, notes and confidence. Each planning step (collection, linking, conditions, shape,
spans) is a mixin over it; `query.offline` runs them in order."""

from __future__ import annotations

import re
from typing import Any

from context_engine.query.ir import Duration, Filter, Length, TimeRange
from context_engine.query.plan import PlanningContext
from context_engine.query.schema import CollectionSchema

# A count written as a word ("more than ten answers", "top three"): the conditions and spans steps read it.
NUMBER_WORDS = {
    w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
# ... and in Chinese ("前三名", "往前推两个月"): the shape step and follow-ups read it.
CJK_NUMBERS = {c: n for n, c in enumerate("一二三四五六七八九十", 1)} | {"两": 2}
# The calendar unit a word names ("which month", "how many days", "哪一周", "the quarter before", "往后一个礼拜"): a
# period the records are counted per or ranked by (the shape step), or a window moved by (follow-ups).
PERIOD_UNITS = {
    "day": "day",
    "date": "day",
    "week": "week",
    "month": "month",
    "quarter": "quarter",
    "year": "year",
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "月": "month",
    "季度": "quarter",
    "年": "year",
}
# Either state, said as an aside ("..., open or closed?", "whether open or not", "(open or closed)"): no
# condition on the state, and no split by it ("open vs closed" asks for one count each)
EITHER_STATE = (
    r"(?:,\s*|\(\s*|\b(?:whether|either|regardless of whether)\s+(?:they(?:'re| are| were)\s+|it(?:'s| is| was)\s+)?)"
    r"(?:open or (?:closed|not)|closed or (?:open|not))\b|\b(?:open|closed) or not\b"
)
# Fields a state word sets, whose values a negation picks between ("not closed" is open, "not merged"
# is merged: false, "not done" a status): the state rules say the negation themselves.
STATE_FIELDS = frozenset({"state", "merged", "draft", "state_reason", "status"})


class Draft:
    collection: str
    schema: CollectionSchema
    collection_spans: list[tuple[int, int]]

    def __init__(self, ctx: PlanningContext):
        self.ctx = ctx
        self.q = ctx.question
        self.low = ctx.question.lower()
        self.used: list[tuple[int, int]] = []
        self.how: list[str] = []  # what consumed each used span: value, person, time, shape ...
        self.notes: list[str] = []
        self.confidence = 1.0
        self.filters: list[Filter] = []
        self.times: list[TimeRange] = []
        self.times_any = False  # the times are alternatives: periods compared (`PlanIR.times_any`)
        self.undated: list[tuple[int, int]] = []  # times the question says that no field of the kind can date
        self.durations: list[Duration] = []  # measures between two dates of a record (`planner.durations`)
        self.lengths: list[Length] = []  # lengths of a text or an array of a record (`planner.lengths`)
        self.duration_verb: str | None = None  # the event that ends the duration read ("merged"), which dates it
        # people named in a role these records do not store ("who mentions Rashid" over PRs): (span, role)
        self.unplaced: list[tuple[tuple[int, int], str]] = []

    def use(self, span: tuple[int, int], how: str = "value") -> None:
        self.used.append(span)
        self.how.append(how)

    def mark(self, pattern: str, how: str = "value") -> re.Match | None:
        """The first match not inside words already explained ("draft" in "non-draft")."""
        for m in re.finditer(pattern, self.q, re.I):
            if not self._is_used(m.span()):
                self.use(m.span(), how)
                return m
        return None

    def _is_used(self, span: tuple[int, int]) -> bool:
        return any(not (span[1] <= a or span[0] >= b) for a, b in self.used)

    def _used_as(self, span: tuple[int, int]) -> str | None:
        """What consumed the first used span overlapping this one (None: nothing)."""
        return next(
            (how for used, how in zip(self.used, self.how) if not (span[1] <= used[0] or span[0] >= used[1])), None
        )

    def add_filter(self, path: str, value: Any, op: str = "eq") -> None:
        # Every step uses the words of a condition just before adding it: those are its span.
        self.filters.append(Filter(path, op, value, span=self.used[-1] if self.used else None))

    def has_filter(self, path: str) -> bool:
        return any(f.field == path for f in self.filters) or any(t.field == path for t in self.times)

"""Durations between two dates of one record: how long a PR took to be merged, an issue stayed open
before it was closed (`ir.Duration`: the end date minus the creation date, in days). The step reads the
phrase that says the span of time ("from open to merge", "took … to get merged", "sat open … before
landing", "slowest merge", 从开到合并, 几天才关掉) and what the question asks of it: a bound ("more than 30
days", "longer than a month", 超过 30 天: a filter), the mean ("on average", 平均: the shape avg) or the record
with the longest or shortest ("took the longest", "the fastest merge": argmax/argmin, top-N with a count).
A duration phrase with none of these stays unread: the answer says so rather than list the records."""

from __future__ import annotations

import re
from dataclasses import replace

from context_engine.query.fields import field_for
from context_engine.query.ir import Duration, Shape, SortKey
from context_engine.query.planner.draft import NUMBER_WORDS, Draft
from context_engine.query.timeexpr import cn_number

# The event that ends the span, by its word: merging (landing) or closing.
_END = r"(merg\w*|land\w*|clos\w*|合并|合入|关闭|关掉|关)"
_SPAN = re.compile(
    r"\bfrom (?:being )?open(?:ed|ing)? (?:to|until|till|through) (?:being |getting |its |their )?"
    + _END
    + r"|\b(?:took|take|takes|taking|taken|spent|spend|spends|needed|need|needs)\b[^.?!;]{0,60}?\bto (?:get |be |being )?"
    + _END
    + r"|(?:\b(?:sat|sit|sits|sitting|stayed|stay|stays|remained|remain|remains|lingered|was|were|been|kept|stood)\s+)?"
    + r"\bopen\b[^.?!;]{0,50}?\bbefore (?:(?:it|they|being|getting|it was|they were|it got|they got|finally) )*"
    + _END
    + r"|\b(?:slowest|fastest|quickest|longest|shortest|speediest)\s+"
    + _END
    + r"|\btime[- ]to[- ]"
    + _END
    + r"|从(?:打)?开(?:启|出来)?到"
    + _END
    + r"|(?:几|多少)天才(?:被)?"
    + _END
    + r"|多久才(?:被)?"
    + _END
    # the end said with a bound on the time it took ("merged within a day of being opened", "closed in
    # under a week", 一天之内就合并): the bound is read below; "within the last month" names no number
    + r"|\b"
    + _END
    + r"(?=\s+(?:(?:with)?in|in under|in less than|in more than|after|only after)\s+"
    + r"(?:more than |less than |over |under |at least |at most |no more than )?(?:\d+|an?|one|two|three)\s*"
    + r"(?:hours?|days?|weeks?|months?)\b)"
    + r"|(?<=[\d一二两三四五六七八九十天周月时])\s*(?:之内|以内|内)(?:就|便)?(?:被)?"
    + _END,
    re.I,
)
# The start of a span said after its bound: "… within a day of being opened", "after opening".
_FROM_START = re.compile(
    r"\s*\b(?:of|after|from)\s+(?:being\s+|getting\s+|it was\s+|they were\s+)?"
    r"(?:open(?:ed|ing)?|creat(?:ed|ion|ing)|fil(?:ed|ing)|report(?:ed|ing)|submitt?(?:ed|ing)|posted)\b",
    re.I,
)
_UNIT_DAYS = {
    "hour": 1 / 24,
    "小时": 1 / 24,
    "day": 1,
    "week": 7,
    "month": 30,
    "year": 365,
    "天": 1,
    "周": 7,
    "星期": 7,
    "月": 30,
    "年": 365,
}
_NUMBER = r"(\d+(?:\.\d+)?|an?|one|" + "|".join(NUMBER_WORDS) + r")"
_MORE = r"more than|longer than|over|greater than|at least|upwards of|in excess of|beyond|>"
_LESS = r"less than|under|fewer than|shorter than|within|at most|no more than|<"
_BOUND = re.compile(
    rf"\b({_MORE}|{_LESS})\s+{_NUMBER}\s*(hour|day|week|month|year)s?\b"
    r"|(超过|多于|大于|不止|少于|不到|小于|以内)\s*([\d一二两三四五六七八九十]+)\s*(?:个)?(小时|天|周|星期|月|年)"
    r"|([\d一二两三四五六七八九十]+)\s*(?:个)?(小时|天|周|星期|月|年)\s*(以上|以下|以内|之内|内)",
    re.I,
)
_AVERAGE = re.compile(r"\b(?:on )?average\b|\bavg\b|\bmean\b|\btypical(?:ly)?\b|平均", re.I)
_LONGEST = re.compile(r"\b(?:longest|slowest|most time|longest time)\b|最久|最慢|最长", re.I)
_SHORTEST = re.compile(r"\b(?:shortest|fastest|quickest|speediest|least time)\b|最快|最短", re.I)
# Words that only say the measure is a length of time: read with the duration.
_TIME_WORDS = re.compile(
    r"\bhow long\b|\bhow many days\b|\b(?:in|the) days\b|\bdays\b|\bhow much time\b|(?:要|开了?|用了?)?(?:几|多少)天|多久|多长时间",
    re.I,
)
_HOURS = re.compile(r"\b(?:in|how many) hours\b|(?:几个|多少个?)小时", re.I)
_COUNTED = re.compile(rf"\b(?:the\s+)?{_NUMBER}\s+(?=(?:slowest|fastest|quickest|longest|shortest)\b)", re.I)


class DurationStep(Draft):
    """The duration a question measures, read before the states and times: its words are not a state
    ("open") nor a time ("more than 30 days" is no "30 days ago")."""

    def _duration(self) -> Shape | None:
        said = next((m for m in _SPAN.finditer(self.q) if not self._is_used(m.span())), None)
        if said is None:
            return None
        word = next(g for g in said.groups() if g).lower()
        end_role = "merged" if word.startswith(("merg", "land", "合")) else "closed"
        start, end = field_for(self.schema, "created"), field_for(self.schema, end_role)
        if start is None or end is None or start == end:
            return None
        hours = _HOURS.search(self.q)
        unit = "hours" if hours else "days"
        name = f"{unit}_to_{'merge' if end_role == 'merged' else 'close'}"
        bound = _BOUND.search(self.q)
        average = _AVERAGE.search(self.q)
        extreme = _LONGEST.search(self.q) or _SHORTEST.search(self.q)
        counted = _COUNTED.search(self.q) if extreme and not average else None
        limit = _count(counted.group(1)) if counted else 1
        longest = bool(extreme and _LONGEST.fullmatch(extreme.group(0)))
        shape = (
            Shape("avg", field=name)
            if average
            else Shape("argmax" if longest else "argmin", field=name)
            if extreme and limit == 1
            else Shape("top", field=name, limit=limit)
            if extreme and longest
            else Shape("list", sort=[SortKey(name, 1)], limit=limit)
            if extreme
            else None
        )
        if not (bound or shape):
            return None  # what the question asks of the duration is not read: its words stay unread
        self.use(said.span(), "shape")
        self.durations.append(Duration(name, start, end, unit=unit))
        if bound:
            self.use(bound.span(), "shape")
            start_said = _FROM_START.match(self.q, bound.end())
            if start_said:
                self.use(start_said.span(), "shape")
            lead = re.search(r"\b(?:only\s+)?(?:after|in)\s+$", self.q[: bound.start()], re.I)
            if lead:  # "merged after more than 30 days", "closed in under a week"
                self.use(lead.span(), "shape")
            days, op = _bound_of(bound)
            self.add_filter(name, days * 24 if unit == "hours" else days, op)
        for cue in (average if shape else None, extreme if shape else None, counted if shape else None, hours):
            if cue:
                self.mark(re.escape(cue.group(0)), "shape")
        while self.mark(_TIME_WORDS.pattern, "shape"):
            pass
        # A bound said as a length of time is no time range of the records ("more than 30 days" ago).
        self.ctx = replace(self.ctx, times=[t for t in self.ctx.times if not self._said_inside(t.text)])
        self.duration_verb = end_role
        return shape

    def _said_inside(self, text: str) -> bool:
        at = self.low.find(text.lower())
        return at >= 0 and self._is_used((at, at + len(text)))


def _count(word: str) -> int:
    word = word.lower()
    return 1 if word in ("a", "an") else NUMBER_WORDS.get(word) or int(float(word))


def _bound_of(m: re.Match) -> tuple[float, str]:
    """A bound on a duration in days and its operator: "more than a month" is > 30, "超过 2 周" > 14."""
    if m.group(1):
        number, unit = _count(m.group(2)), m.group(3).lower()
        op = "lt" if re.fullmatch(_LESS, m.group(1), re.I) else "gte" if m.group(1).lower() == "at least" else "gt"
    elif m.group(4):
        number, unit = cn_number(m.group(5)), m.group(6)
        op = "lt" if m.group(4) in ("少于", "不到", "小于", "以内") else "gt"
    else:
        number, unit = cn_number(m.group(7)), m.group(8)
        op = "gt" if m.group(9) == "以上" else "lt"
    days = number * _UNIT_DAYS[unit]
    return (int(days) if float(days).is_integer() else round(days, 6)), op

"""Days of the week as a condition: "merged on a weekend", "messages posted on Mondays", "weekday commits",
周末合并的 PR, 每周一的消息 (a `day_of_week` filter on the date the question dates, UTC). Read before the times:
a day named as a habit ("on Mondays", "saturday or sunday" spelling out a weekend) is not the latest such day
("since Monday")."""

from __future__ import annotations

import re
from dataclasses import replace

from context_engine.query.fields import field_for
from context_engine.query.ir import Filter
from context_engine.query.planner.draft import Draft

# MongoDB's `$dayOfWeek`: 1 Sunday … 7 Saturday
_DAY_NUMBERS = {
    **{d: i + 2 for i, d in enumerate("monday tuesday wednesday thursday friday saturday".split())},
    "sunday": 1,
    **{d: i + 2 for i, d in enumerate("一二三四五六")},
    "日": 1,
    "天": 1,
}
_DAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SAID = re.compile(
    r"(?P<weekend>\bweekends?\b|周末)"
    # "the least active weekday" asks which day, `ShapeStep._cyclic_extreme`: no condition
    r"|(?<!which )(?<!what )(?<!busiest )(?<!quietest )(?<!active )(?<!peak )(?<!slowest )(?<!calmest )"
    r"(?P<weekday>\bweekdays?\b|\bwork(?:ing)?[- ]?days?\b|\bbusiness days?\b|工作日)"
    # a day as a habit: plural, "on a Monday", "every Monday"; 每周一, 每个星期五
    rf"|(?:\bon (?:a )?|\bevery )?\b{_DAY}s\b|\bon an? {_DAY}\b|\bevery {_DAY}\b"
    r"|每(?:个|逢)?(?:周|星期|礼拜)([一二三四五六日天])",
    re.I,
)
# Words that only restate the days or the clock they are told by: "(saturday or sunday, UTC)", "in UTC"
_RESTATED = re.compile(
    rf"\(\s*{_DAY}(?:\s*(?:or|and|/|,)\s*{_DAY})*(?:\s*,?\s*(?:in\s+)?UTC)?\s*\)|\b(?:in\s+)?UTC\b|\bon\b(?=\s+(?:a\s+)?weekends?\b)",
    re.I,
)


class WeekdayStep(Draft):
    weekdays: tuple[list[int], tuple[int, int]] | None = None

    def _weekdays(self) -> None:
        """The days of the week the question keeps, their words read; the filter waits for the date field."""
        said = next((m for m in _SAID.finditer(self.q) if not self._is_used(m.span())), None)
        if said is None:
            return
        if said.group("weekend"):
            days = [1, 7]
        elif said.group("weekday"):
            days = [2, 3, 4, 5, 6]
        else:
            day = next(g for g in said.groups()[2:] if g)
            days = [_DAY_NUMBERS[day.lower()]]
        self.use(said.span(), "value")
        while self.mark(_RESTATED.pattern, "value"):
            pass
        self.weekdays = (days, said.span())
        # A day named as a habit is no time range ("saturday": not the latest Saturday).
        self.ctx = replace(self.ctx, times=[t for t in self.ctx.times if not self._time_used(t.text)])

    def _time_used(self, text: str) -> bool:
        at = self.low.find(text.lower())
        return at >= 0 and self._is_used((at, at + len(text)))

    def _dated_weekdays(self, time_field: str | None, state_verb: str | None) -> None:
        """The weekday condition on the date the question dates: the time's field, else the verb's
        ("merged on a weekend": the merge date), else the creation date."""
        if self.weekdays is None:
            return
        days, span = self.weekdays
        date = time_field or field_for(self.schema, state_verb or "created") or field_for(self.schema, "created")
        if date is None:
            self.undated.append(span)
            return
        self.filters.append(Filter(date, "day_of_week", days, span=span))

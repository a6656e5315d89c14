"""Days of the week as a condition (`planner/weekdays.py`): a weekend, working days or one day as a habit,
on the date the question dates; the days never read as the latest such day."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.query.conftest import plan


@pytest.mark.parametrize(
    "question,field,days",
    [
        ("how many pull requests were merged over weekends this year?", "merged_at", [1, 7]),
        ("PRs opened on working days in 2026", "created_at", [2, 3, 4, 5, 6]),
        ("slack messages posted on Sundays", None, [1]),
        ("weekend merges in 2026 (saturday and sunday, in UTC)", "merged_at", [1, 7]),
        ("2026 年周末合并的 PR 有多少", "merged_at", [1, 7]),
        ("每个星期三开的 PR", "created_at", [4]),
    ],
)
def test_a_day_of_the_week_is_a_condition_on_the_date_dated(catalog, question, field, days):
    p = plan(catalog, question)
    (said,) = [f for f in p.ir.filters if f.op == "day_of_week"]
    assert said.value == days and (field is None or said.field == field)
    assert not [t for t in p.ir.times if t.start and t.end and t.end - t.start <= timedelta(days=1)]  # no single day


def test_a_day_named_alone_is_still_the_latest_one(catalog):
    """ "since Monday" is a time, not every Monday."""
    p = plan(catalog, "PRs merged since Monday")
    assert not [f for f in p.ir.filters if f.op == "day_of_week"] and p.ir.times

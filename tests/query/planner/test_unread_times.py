"""A time the question says that no rule reads is reported as not understood, never dropped: dropping it
would answer for all time."""

import pytest

from context_engine.query.engine import resolve
from tests.query.planner.test_linking import _plan, github  # noqa: F401 (the fixture)
from tests.query.test_timeexpr import NOW, UNREADABLE


@pytest.mark.parametrize("question,word", UNREADABLE)
def test_a_time_no_rule_reads_is_said_not_understood(github, question, word):  # noqa: F811
    plan = _plan(github, question)
    assert any(word in s["text"] for s in plan.not_understood), plan.not_understood


@pytest.mark.parametrize(
    "question,start",
    [
        ("PRs merged in 03/2025", "2025-03-01"),
        ("PRs merged in Q3 last year", "2024-07-01"),  # the plans' now: February 2025
        ("PRs merged the year before last", "2023-01-01"),
        ("PRs merged 2025-03", "2025-03-01"),
        ("PRs merged at the end of 2021 (in December)", "2021-12-01"),
    ],
)
def test_a_time_read_is_not_reported(github, question, start):  # noqa: F811
    plan = _plan(github, question)
    assert not plan.not_understood, plan.not_understood
    assert [t.start.date().isoformat() for t in plan.ir.times] == [start]


def test_a_day_that_reads_two_ways_is_declined_with_both(catalog):
    ctx, failed = resolve("PRs merged on 03/04/2025", NOW, catalog, None)
    assert ctx is None and failed.unresolved == "03/04/2025"
    assert "March 4, 2025" in failed.message and "April 3, 2025" in failed.message


def test_a_misspelt_month_is_read_and_said(catalog):
    ctx, failed = resolve("PRs merged in Febuary 2025", NOW, catalog, None)
    assert failed is None and ctx.read_as == "PRs merged in February 2025"
    assert [(t.start.month, t.end.month) for t in ctx.times] == [(2, 3)]

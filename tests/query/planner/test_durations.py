"""Durations between two dates of a record (`planner/durations.py`): the time a PR took to be merged or a
ticket stayed open, bounded, averaged or ranked; each question planned on the sample organisation (and the
mean run against the records)."""

from __future__ import annotations

import pytest

from tests.conftest import NOW
from tests.query.conftest import plan


def duration_filters(p):
    names = {d.name for d in p.ir.durations}
    return [(f.op, f.value) for f in p.ir.filters if f.field in names]


@pytest.mark.parametrize(
    "question,op,days",
    [
        ("pull requests that needed over two weeks to be merged", "gt", 14),
        ("how many PRs stayed open more than 10 days before they got merged?", "gt", 10),
        ("PRs that took less than 3 days from opening to merge in 2026", "lt", 3),
        ("2026 年合并的 PR 里从开到合并超过两周的有几个", "gt", 14),
        ("合并前从开到合并不到 2 天的 PR", "lt", 2),
        ("PRs that took more than a month to land", "gt", 30),
    ],
)
def test_a_bound_on_the_time_to_merge_is_a_filter_on_the_duration(catalog, question, op, days):
    p = plan(catalog, question)
    assert [(d.start, d.end, d.unit) for d in p.ir.durations] == [("created_at", "merged_at", "days")]
    assert duration_filters(p) == [(op, days)]
    assert not p.not_understood
    assert not any(t.end and t.start is None for t in p.ir.times)  # "over two weeks" is no time ago


def test_the_bound_compiles_to_the_difference_of_the_dates_in_days(catalog):
    match = plan(catalog, "PRs that took more than 5 days to get merged").pipeline[0]["$match"]
    assert match["$expr"] == {"$gt": [{"$divide": [{"$subtract": ["$merged_at", "$created_at"]}, 86_400_000]}, 5]}


@pytest.mark.parametrize(
    "question",
    ["on average, how many days did a PR take to merge in 2026?", "2026 年的 PR 平均开了几天才合并？"],
)
def test_the_mean_duration_is_an_average_of_it(catalog, question):
    p = plan(catalog, question)
    assert p.ir.shape.kind == "avg" and p.ir.shape.field == p.ir.durations[0].name
    assert not p.not_understood


@pytest.mark.parametrize(
    "question,kind",
    [
        ("which PR spent the longest time open before being merged?", "argmax"),
        ("the quickest merge of 2026", "argmin"),
    ],
)
def test_the_longest_or_shortest_is_the_record_holding_it(catalog, question, kind):
    p = plan(catalog, question)
    assert p.ir.shape.kind == kind and p.ir.shape.field == p.ir.durations[0].name
    assert {"$addFields": {p.ir.durations[0].name: p.pipeline[-3]["$addFields"][p.ir.durations[0].name]}} in p.pipeline


def test_a_count_of_the_fastest_lists_them_by_the_duration(catalog):
    p = plan(catalog, "the four fastest merges")
    assert p.pipeline[-2:] == [{"$sort": {"days_to_merge": 1}}, {"$limit": 4}]


def test_hours_asked_for_measure_the_duration_in_hours(catalog):
    p = plan(catalog, "how many hours did PRs take to merge on average?")
    assert p.ir.durations[0].unit == "hours" and not p.not_understood


def test_a_duration_nothing_is_asked_of_stays_unread(catalog):
    """ "how long did it take to merge" with no bound, mean or extreme: no plan claims the words."""
    p = plan(catalog, "how long did the PRs take to merge")
    assert not p.ir.durations and p.not_understood


def test_the_plans_run_and_agree_with_the_records(settings):
    """The mean duration over the month's merges equals the mean of merged minus created over the PRs merged
    then (fewer than a list's cap)."""
    from context_engine.assistant.structured_query import run_structured
    from context_engine.text import parse_datetime

    average = run_structured("on average, how many days did a PR take to merge in November 2026?", settings, now=NOW)
    listed = run_structured("PRs merged in November 2026", settings, now=NOW)
    spans = [
        (parse_datetime(str(r["merged_at"])) - parse_datetime(str(r["created_at"]))).total_seconds() / 86_400
        for r in listed.rows
    ]
    assert 0 < len(spans) < 200 and average.rows[0]["average"] == pytest.approx(sum(spans) / len(spans))


@pytest.mark.parametrize(
    "question,op,days",
    [
        ("PRs merged within a day of being opened, how many?", "lt", 1),
        ("how many PRs were merged within 24 hours", "lt", 1),
        ("count the PRs that got merged after more than 30 days", "gt", 30),
        ("一天之内就合并的 PR 有多少", "lt", 1),
    ],
)
def test_a_bound_said_after_the_end_of_the_span(catalog, question, op, days):
    p = plan(catalog, question)
    assert [(d.start, d.end) for d in p.ir.durations] == [("created_at", "merged_at")]
    assert duration_filters(p) == [(op, days)]
    assert not p.not_understood, p.not_understood


def test_within_the_last_month_is_a_window_not_a_duration(catalog):
    assert plan(catalog, "PRs merged within the last month").ir.durations == []

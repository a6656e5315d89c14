"""Nested questions (`planner/nested.py`): one answer feeds the next. Each question is planned on the sample
organisation; the plan must be the outer question with the inner ranking nested, its slot (a person's field
or a date) named, every word read — never the inner ranking alone."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.query.fields import people_paths
from tests.conftest import NOW
from tests.query.conftest import plan

YEAR = (datetime(2026, 1, 1), NOW)


@pytest.mark.parametrize(
    "question,inner,outer",
    [
        (
            "The person who opened the most pull requests in 2026: how many issues did they file in 2026?",
            "pull_requests",
            "issues",
        ),
        ("how many issues did 2026's most prolific PR author open that same year?", "pull_requests", "issues"),
        (
            "whoever opened the most issues in 2026 - how many of their PRs were merged that same year?",
            "issues",
            "pull_requests",
        ),
        ("take the top PR author of 2026: how many messages did they post that year?", "pull_requests", "messages"),
        ("2026 年开 PR 最多的那位，那年开了几个 issue？", "pull_requests", "issues"),
        ("Who opened the most PRs in 2026? How many issues did that person open that year?", "pull_requests", "issues"),
    ],
)
def test_a_person_found_first_is_the_subject_of_the_rest(catalog, question, inner, outer):
    p = plan(catalog, question)
    nested = p.ir.nested
    assert nested is not None and nested.slot == "person", p.notes
    assert (nested.inner.collection, p.collection) == (inner, outer)
    # the inner step ranks people, enough of them to see a tie at the top
    assert nested.inner.shape.kind == "argmax" and nested.inner.shape.over == "groups" and nested.inner.shape.limit > 1
    assert nested.field in people_paths(catalog.schemas[outer].kind)  # the outer kind's own field for the person
    # the outer plan holds no person yet: the inner step's top result is bound when it ran
    assert not [f for f in p.ir.filters if f.field == nested.field]
    # "that same year" / 那年 is the year the person was ranked over (2026 up to now)
    assert [(t.start, t.end) for t in nested.inner.times] == [YEAR]
    assert [(t.start, t.end) for t in p.ir.times] == [YEAR]
    assert p.not_understood == []
    assert p.pipeline and p.pipeline[-1] == {"$count": "count"}


@pytest.mark.parametrize(
    "question",
    [
        "Take 2026's busiest month for merges - who authored the most of the PRs merged that month?",
        "in the month of 2026 with the most merged PRs, whose PRs were merged the most?",
        "2026 年合并 PR 最多的那个月，谁的 PR 合并得最多？",
    ],
)
def test_a_period_found_first_is_the_time_of_the_rest(catalog, question):
    p = plan(catalog, question)
    nested = p.ir.nested
    assert nested is not None and nested.slot == "time", p.notes
    assert nested.inner.shape.kind == "argmax" and nested.inner.shape.bucket == "month"
    assert [(t.start, t.end) for t in nested.inner.times] == [YEAR]
    assert nested.field == "merged_at"  # the month of merging, and the PRs merged in it
    assert p.ir.times == []  # bound once the inner step ran
    assert p.ir.shape.kind == "group" and p.ir.shape.field == "user.login"
    assert p.not_understood == []


def test_a_period_the_rest_names_no_date_of_is_the_date_it_was_ranked_by(catalog):
    p = plan(catalog, "In 2026's busiest month for merges, how many PRs did Rashid open?")
    nested = p.ir.nested
    assert nested is not None and nested.slot == "time" and nested.field == "merged_at"
    assert [(t.start, t.end) for t in nested.inner.times] == [YEAR]  # "In 2026's": the year is the inner part's
    assert p.pipeline[-1] == {"$count": "count"} and p.not_understood == []


def test_the_inner_conditions_hold_for_a_period_of_the_same_records(catalog):
    p = plan(catalog, "in the busiest month of 2026 for #general, who posted the most?")
    nested = p.ir.nested
    assert nested is not None and nested.slot == "time"
    inner = {(f.field, f.value) for f in nested.inner.filters}
    assert inner and inner <= {(f.field, f.value) for f in p.ir.filters}  # the month is #general's, so are the posts


@pytest.mark.parametrize(
    "question",
    [
        "who opened the most pull requests in 2026",  # one ranking, nothing after it
        "which month of 2026 had the most merged PRs",
        "open issues, most commented first",  # a comma after "most", no ranking of people or periods
        "PRs Rashid merged last week, newest first",
    ],
)
def test_a_question_with_one_step_is_not_nested(catalog, question):
    assert plan(catalog, question).ir.nested is None


def test_a_rankings_own_counts_asked_after_it_are_no_second_step(catalog):
    p = plan(catalog, "Top three PR authors in 2026, with their PR counts?")
    assert p.ir.nested is None and p.ir.shape.kind == "group" and p.ir.shape.limit == 3 and not p.not_understood


@pytest.mark.parametrize(
    "question", ["who opened the most issues in 2026 — top three and their numbers", "most active PR authors, top 3"]
)
def test_a_rest_that_only_sizes_the_ranking_is_the_ranking(catalog, question):
    """ "their numbers" are the ranking's counts, not a question about the person it finds."""
    p = plan(catalog, question)
    assert p.ir.nested is None and (p.ir.shape.kind, p.ir.shape.limit) == ("group", 3), p.notes
    assert not p.not_understood, p.not_understood


def test_an_outer_part_nothing_reads_is_said_not_understood(catalog):
    p = plan(catalog, "the person who opened the most pull requests in 2026: their zorbling quuxes?")
    assert {"zorbling", "quuxes"} <= {w.strip("?") for s in p.not_understood for w in s["text"].split()}
    assert p.confidence < 0.7

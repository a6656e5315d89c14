"""Conditions that cannot hold together: reported only when no record can meet them (checked on a
store for every pair of a pool of conditions), and declined by the engine instead of answered "0"."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest

from context_engine.query.consistency import contradictions, implies
from context_engine.query.ir import Filter, PlanIR, TimeRange
from context_engine.query.schema import CollectionSchema, FieldInfo
from tests.query.conftest import refs

POOL = [
    Filter("state", "eq", "open"),
    Filter("state", "eq", "closed"),
    Filter("state", "ne", "open"),
    Filter("state", "in", ["open", "closed"]),
    Filter("state", "nin", ["open"]),
    Filter("state", "eq", "open", negate=True),
    Filter("comments", "gte", 1),
    Filter("comments", "lt", 1),
    Filter("comments", "gt", 3),
    Filter("comments", "lte", 3),
    Filter("comments", "in", [0, None]),
    Filter("comments", "eq", 7),
    Filter("comments", "gt", 1, negate=True),
    Filter("milestone", "empty"),
    Filter("milestone", "not_empty"),
    Filter("milestone.title", "eq", "v1"),
    Filter("assignee", "exists", True),
    Filter("assignee", "exists", False),
    Filter("assignee", "eq", "ann"),
    Filter("assignee", "ne", "ann"),
    # an array: two labels can both be there, a label and no labels cannot
    Filter("label", "eq", "bug"),
    Filter("label", "eq", "docs"),
    Filter("label", "ne", "bug"),
    Filter("label", "nin", ["bug", "docs"]),
    Filter("labels", "empty"),
    Filter("label", "in", ["bug"]),
    Filter("title", "words", ["three"]),
    Filter("title", "empty"),
]
TIMES = [
    TimeRange("created", datetime(2026, 1, 1), datetime(2026, 2, 1)),
    TimeRange("created", datetime(2026, 2, 1), datetime(2026, 3, 1)),
    TimeRange("created", datetime(2026, 1, 15), None),
    TimeRange("created", None, datetime(2026, 1, 10)),
]


@pytest.mark.parametrize("a,b", list(itertools.combinations(POOL, 2)), ids=lambda f: f"{f.field}-{f.op}-{f.value}")
def test_a_pair_reported_as_contradicting_matches_no_record(store, schema, a, b):
    ir = PlanIR("issues", filters=[a, b])
    if contradictions(ir, schema):
        assert refs(ir, store, schema) == []


@pytest.mark.parametrize(
    "a,b",
    [
        (Filter("state", "eq", "open"), Filter("state", "eq", "closed")),
        (Filter("state", "eq", "open"), Filter("state", "eq", "open", negate=True)),
        (Filter("comments", "gte", 1), Filter("comments", "in", [0, None])),  # "had comments" and "no comments"
        (Filter("comments", "gt", 3), Filter("comments", "lte", 3)),
        (Filter("comments", "gt", 3), Filter("comments", "lt", 4)),  # no whole number of comments between
        (Filter("assignee", "exists", True), Filter("assignee", "exists", False)),
        (Filter("assignee", "ne", "ann"), Filter("assignee", "eq", "ann")),  # "Ann's" and "not Ann's"
        (Filter("label", "eq", "bug"), Filter("label", "nin", ["bug", "docs"])),
        (Filter("labels", "empty"), Filter("label", "eq", "bug")),  # "no labels" and "labelled bug"
        (Filter("milestone", "empty"), Filter("milestone.title", "eq", "v1")),
    ],
)
def test_the_misreadings_it_is_for_are_found(schema, a, b):
    assert contradictions(PlanIR("issues", filters=[a, b]), schema)


@pytest.mark.parametrize(
    "a,b",
    [
        (Filter("label", "eq", "bug"), Filter("label", "eq", "docs")),  # an array holds both
        (Filter("label", "eq", "docs"), Filter("label", "ne", "bug")),
        (Filter("state", "ne", "open"), Filter("state", "in", ["open", "closed"])),
        (Filter("assignee", "exists", False), Filter("assignee", "ne", "ann")),
        (Filter("comments", "gte", 1), Filter("comments", "lte", 1)),
    ],
)
def test_conditions_that_can_hold_together_are_not_reported(schema, a, b):
    assert contradictions(PlanIR("issues", filters=[a, b]), schema) == []


def test_bounds_leave_room_between_real_numbers():
    scores = CollectionSchema("issues", fields={"score": FieldInfo("score", {"double"})})
    ir = PlanIR("issues", filters=[Filter("score", "gt", 3), Filter("score", "lt", 4)])
    assert contradictions(ir, scores) == []


@pytest.mark.parametrize(
    "old,new,implied",
    [
        (("gt", 20), ("gte", 1), True),  # threads with over 20 replies are threads (1+ replies)
        (("gte", 1), ("gt", 20), False),  # the other way round narrows
        (("eq", 3), ("gte", 1), True),
        (("in", [2, 5]), ("gt", 1), True),
        (("in", [0, 5]), ("gt", 1), False),
        (("gt", 0), ("gte", 1), True),  # on whole numbers "> 0" is ">= 1"
        (("lt", 5), ("lte", 4), True),
        (("lte", 5), ("lt", 5), False),
        (("gte", 1), ("ne", 0), False),  # only a bound is implied
        (("exists", True), ("gte", 0), False),
    ],
)
def test_a_bound_another_condition_implies(schema, old, new, implied):
    assert implies(Filter("comments", *old), Filter("comments", *new), schema) is implied


def test_on_real_numbers_an_exclusive_bound_is_no_inclusive_one():
    scores = CollectionSchema("issues", fields={"score": FieldInfo("score", {"double"})})
    assert implies(Filter("score", "gt", 0), Filter("score", "gte", 1), scores) is False
    assert implies(Filter("score", "gt", 1), Filter("score", "gte", 1), scores) is True
    assert implies(Filter("score", "gt", 20), Filter("score", "gt", 20, negate=True), scores) is False


@pytest.mark.parametrize(
    "a,b,clash",
    [
        (TIMES[0], TIMES[1], True),  # January and February
        (TIMES[0], TIMES[2], False),  # January and since the 15th
        (TIMES[1], TIMES[3], True),  # February and before the 10th of January
        (TIMES[2], TIMES[3], True),
        (TIMES[0], TIMES[3], False),
    ],
)
def test_time_ranges_that_do_not_meet(store, schema, a, b, clash):
    ir = PlanIR("issues", times=[a, b])
    assert bool(contradictions(ir, schema)) is clash
    if clash:
        assert refs(ir, store, schema) == []


def test_a_range_that_ends_before_it_starts(schema):
    backwards = TimeRange("created", datetime(2026, 3, 1), datetime(2026, 1, 1), span=(4, 20))
    assert contradictions(PlanIR("issues", times=[backwards]), schema) == [((4, 20), (4, 20))]


def test_the_spans_of_both_conditions_are_reported(schema):
    ir = PlanIR(
        "issues", filters=[Filter("state", "eq", "open", span=(0, 4)), Filter("state", "eq", "closed", span=(9, 15))]
    )
    assert contradictions(ir, schema) == [((0, 4), (9, 15))]


def test_conditions_on_different_fields_and_raw_pipelines_are_not_judged(schema):
    assert (
        contradictions(
            PlanIR("issues", filters=[Filter("state", "eq", "open"), Filter("closed", "exists", True)]), schema
        )
        == []
    )
    assert (
        contradictions(
            PlanIR("issues", pipeline=[{"$match": {"state": "open"}}, {"$match": {"state": "closed"}}]), schema
        )
        == []
    )


def test_time_ranges_that_are_alternatives_do_not_clash(schema):
    march_2025 = TimeRange("created", datetime(2025, 3, 1), datetime(2025, 4, 1), span=(0, 5))
    march_2026 = TimeRange("created", datetime(2026, 3, 1), datetime(2026, 4, 1), span=(9, 14))
    assert contradictions(PlanIR("issues", times=[march_2025, march_2026]), schema) == [((0, 5), (9, 14))]
    assert contradictions(PlanIR("issues", times=[march_2025, march_2026], times_any=True), schema) == []

"""Lengths of a record's text or array (`ir.Length`) and the periods of a time range with no record
(`Shape("empty_count")`), compiled, validated and run on a made-up collection of notes — a team's own
kind of record, not Slack's: its text is `body`, its array of people `watchers`."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.kinds.spec import CollectionSpec, PersonField
from context_engine.query.answer import compose
from context_engine.query.compile import CompileError, compile_plan
from context_engine.query.engine import Success
from context_engine.query.execute import run_pipeline
from context_engine.query.ir import Filter, IRError, Length, PlanIR, Shape, SortKey, TimeRange
from context_engine.query.plan import Plan
from context_engine.query.schema import schema_from_documents
from context_engine.query.validate import validate_pipeline
from context_engine.store.documents import open_store

NOTES = [
    {"ref": "n1", "body": "short", "watchers": ["u1"], "at": datetime(2026, 1, 1, 9), "score": 3},
    {"ref": "n2", "body": "x" * 30, "watchers": ["u1", "u2"], "at": datetime(2026, 1, 1, 17), "score": 1},
    {"ref": "n3", "body": "naïve ü", "watchers": [], "at": datetime(2026, 1, 3), "score": 2},  # 7 code points
    {"ref": "n4", "at": datetime(2026, 1, 10), "score": 5},  # no body, no watchers: length 0
    {"ref": "n5", "body": "later", "watchers": ["u3"], "at": datetime(2026, 3, 2), "score": 4},
    {"ref": "n6", "body": "t", "steps": [{"who": "u1"}, {"who": "u2"}], "at": datetime(2026, 3, 3), "score": 0},
]
NOTE = CollectionSpec(
    name="notes",
    noun="note",
    people={"watcher": (PersonField("watchers", "github"),)},
    times={"created": ("at",)},
    text=("body",),
)
BODY = Length("body_length", "body")
WATCHERS = Length("watcher_count", "watchers")
JANUARY = TimeRange("at", datetime(2026, 1, 1), datetime(2026, 2, 1))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from context_engine.config import Settings

    store = open_store(Settings(data_dir=tmp_path_factory.mktemp("lengths"), mongodb_uri=None))
    store.save_kind("t", NOTE)
    store.upsert("notes", "t", [{**doc, "acl": ["*"]} for doc in NOTES])
    return store


@pytest.fixture(scope="module")
def schema():
    return schema_from_documents("notes", NOTES, own_kind=NOTE)


def run(ir: PlanIR, store, schema) -> list[dict]:
    pipeline = compile_plan(ir, schema)
    assert validate_pipeline(pipeline, schema) == []
    return run_pipeline(store, "notes", pipeline, tenant="t", principals=[], schema=schema)


def refs(ir: PlanIR, store, schema) -> list[str]:
    return sorted(r["ref"] for r in run(ir, store, schema))


@pytest.mark.parametrize(
    "f,expected",
    [
        (Filter("body_length", "gt", 10), ["n2"]),
        (Filter("body_length", "lt", 6), ["n1", "n4", "n5", "n6"]),  # characters, not bytes: "naïve ü" is 7
        (Filter("body_length", "eq", 7), ["n3"]),
        (Filter("body_length", "gt", 5, negate=True), ["n1", "n4", "n5", "n6"]),
        (Filter("watcher_count", "gte", 2), ["n2"]),
        (Filter("watcher_count", "eq", 0), ["n3", "n4", "n6"]),  # an empty or missing array
        (Filter("watcher_count", "eq", 0, negate=True), ["n1", "n2", "n5"]),
    ],
)
def test_a_length_is_compared_with_a_number(store, schema, f, expected):
    assert refs(PlanIR("notes", filters=[f], lengths=[BODY, WATCHERS]), store, schema) == expected


def test_records_ranked_by_a_length(store, schema):
    ir = PlanIR("notes", shape=Shape("top", field="watcher_count", limit=1), lengths=[WATCHERS])
    assert [r["ref"] for r in run(ir, store, schema)] == ["n2"]
    longest = PlanIR("notes", shape=Shape("list", sort=[SortKey("body_length", -1)], limit=2), lengths=[BODY])
    assert [r["ref"] for r in run(longest, store, schema)] == ["n2", "n3"]


@pytest.mark.parametrize(
    "field",
    [
        "score",  # a number has no length
        "steps.who",  # one per element of an array of objects: no one length per record
        "nowhere",
    ],
)
def test_a_length_of_anything_but_a_text_or_an_array_is_a_compile_error(schema, field):
    with pytest.raises(CompileError):
        compile_plan(PlanIR("notes", filters=[Filter("n", "gt", 1)], lengths=[Length("n", field)]), schema)


def test_a_length_compared_with_no_whole_number_is_a_compile_error(schema):
    with pytest.raises(CompileError):
        compile_plan(PlanIR("notes", filters=[Filter("body_length", "words", ["long"])], lengths=[BODY]), schema)


def test_lengths_round_trip_through_json_and_are_named_plainly():
    ir = PlanIR("notes", filters=[Filter("watcher_count", "gte", 2)], lengths=[WATCHERS])
    assert PlanIR.from_json(ir.to_json()) == ir
    with pytest.raises(IRError):
        Length("Body Length!", "body")


def strlen_of(path: str) -> list[dict]:
    return [{"$match": {"$expr": {"$gt": [{"$strLenCP": {"$ifNull": [f"${path}", ""]}}, 3]}}}]


def test_the_validator_measures_only_a_text_with_strlencp(schema):
    assert validate_pipeline(strlen_of("body"), schema) == []
    for path in ("watchers", "score", "at"):
        errors = validate_pipeline(strlen_of(path), schema)
        assert any("$strLenCP measures a text field" in e for e in errors), path


@pytest.mark.parametrize(
    "bucket,times,expected",
    [
        ("day", [JANUARY], {"count": 28, "days": 31}),  # records on the 1st (two), the 3rd and the 10th
        # ISO weeks W01 (the 1st, 3rd), W02 (the 10th) and W03 (none): the first and last in part
        ("week", [TimeRange("at", datetime(2026, 1, 1), datetime(2026, 1, 15))], {"count": 1, "weeks": 3}),
        ("month", [TimeRange("at", datetime(2026, 1, 1), datetime(2026, 4, 1))], {"count": 1, "months": 3}),
    ],
)
def test_the_periods_of_a_time_range_with_no_record(store, schema, bucket, times, expected):
    ir = PlanIR("notes", times=times, shape=Shape("empty_count", field="at", bucket=bucket))
    assert run(ir, store, schema) == [expected]


def test_empty_periods_need_a_range_with_both_ends_and_a_calendar_bucket(schema):
    since = PlanIR("notes", times=[TimeRange("at", datetime(2026, 1, 1))], shape=Shape("empty_count", "at", "day"))
    with pytest.raises(CompileError):
        compile_plan(since, schema)
    with pytest.raises(IRError):
        Shape("empty_count", field="at", bucket="weekday")


def test_the_answer_says_how_the_empty_periods_were_counted():
    plan = Plan("notes", [], confidence=1.0, planner="offline")
    text, _ = compose(Success(plan, [{"count": 28, "days": 31}], []), "notes")
    assert text.startswith("28 of the 31 days of the time asked had no record")
    assert "minus those with at least one" in text

"""Validator and store agree: every expression operator and accumulator the validator accepts runs on
the embedded store and on the pymongo path (`mongomock://`, or a real server with MONGODB_URI) with
MongoDB's result, and what the stores could not read alike (a time zone given as a field, an unknown
zone or format specifier) is refused at validation with a sentence."""

from __future__ import annotations

import os
from datetime import datetime
from types import SimpleNamespace

import mongomock
import pytest

from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.validate import ACCUMULATORS, EXPR_OPS, validate_pipeline

# Saturday 2026-01-03 20:30 UTC: Sunday in Shanghai, where a new Sunday-based week ($week) begins.
RECORD = {
    "_id": "r1",
    "tenant_id": "acme",
    "acl": ["*"],
    "title": "HÉllo Wörld",
    "n": 7,
    "m": 3,
    "labels": ["a", "b"],
    "d": datetime(2026, 1, 3, 20, 30),
    "flag": True,
    "none": None,
}

# operator -> [(expression, MongoDB's value on RECORD)]; what MongoDB's manual says each one returns.
CASES: dict[str, list[tuple[object, object]]] = {
    "$year": [("$d", 2026)],
    "$month": [("$d", 1)],
    "$week": [("$d", 0), ({"date": "$d", "timezone": "Asia/Shanghai"}, 1)],
    "$dayOfWeek": [("$d", 7), ({"date": "$d", "timezone": "+05:30"}, 1)],
    "$dayOfMonth": [("$d", 3), ({"date": "$d", "timezone": "America/New_York"}, 3)],
    "$dayOfYear": [("$d", 3), ({"date": "$d"}, 3)],
    "$hour": [("$d", 20), ({"date": "$d", "timezone": "+05:30"}, 2), ({"date": "$d", "timezone": "-0300"}, 17)],
    "$size": [("$labels", 2)],
    "$toLower": [("$title", "hÉllo wörld"), ("$none", "")],  # ASCII letters only, as MongoDB maps case
    "$toUpper": [("$title", "HÉLLO WöRLD"), (7, "7")],
    "$strLenCP": [("$title", 11)],
    "$not": [(["$flag"], False)],
    # A missing operand is below null and equal only to another missing one; true is never 1.
    "$eq": [(["$n", 7], True), (["$missing", None], False), (["$missing", "$nothing"], True), (["$flag", 1], False)],
    "$ne": [(["$n", 7], False)],
    "$gt": [(["$n", 3], True), (["$none", "$missing"], True)],
    "$gte": [(["$n", 7], True)],
    "$lt": [(["$n", 3], False)],
    "$lte": [(["$n", 7], True)],
    "$cmp": [(["$n", "$m"], 1), (["$m", "$n"], -1), (["$n", 7], 0)],
    "$subtract": [
        (["$n", "$m"], 4),
        (["$d", 3_600_000], datetime(2026, 1, 3, 19, 30)),
        ([-9223372036854775807, 2], -9.223372036854776e18),
    ],  # past 64 bits: a double
    "$divide": [(["$n", 2], 3.5)],
    "$in": [(["a", "$labels"], True)],
    "$arrayElemAt": [(["$labels", 1], "b"), (["$labels", -1], "b")],
    "$and": [(["$flag", {"$gt": ["$n", 1]}], True)],
    "$or": [([False, "$flag"], True)],
    "$add": [
        (["$n", "$m", 1], 11),
        (["$d", 86_400_000], datetime(2026, 1, 4, 20, 30)),
        ([9223372036854775807, 1], 9.223372036854776e18),
    ],
    "$multiply": [(["$n", "$m"], 21), ([4611686018427387904, 2], 9.223372036854776e18)],
    "$concat": [(["$title", "!"], "HÉllo Wörld!"), (["$title", "$none"], None)],
    "$substrCP": [(["$title", 1, 3], "Éll"), (["$none", 0, 2], "")],
    "$cond": [(["$flag", "yes", "no"], "yes"), ({"if": {"$lt": ["$n", 3]}, "then": "yes", "else": "no"}, "no")],
    "$ifNull": [(["$none", "x"], "x"), (["$missing", "$none", "y"], "y"), (["$n", "x"], 7)],
    "$literal": [("$n", "$n")],
    "$dateToString": [
        ({"format": "%Y-%m-%dT%H:%M:%S.%LZ", "date": "$d"}, "2026-01-03T20:30:00.000Z"),
        ({"format": "%Y-%m-%d %H:%M", "date": "$d", "timezone": "Asia/Shanghai"}, "2026-01-04 04:30"),
        # %w is 1-7 from Sunday in MongoDB (0-6 in C), %Z the offset in minutes
        (
            {"format": "%w %u %U %V %G %j %z %Z %%", "date": "$d", "timezone": "+05:30"},
            "1 7 01 01 2026 004 +0530 +330 %",
        ),
        ({"format": "%Y", "date": "$none"}, None),
    ],
}

# accumulator -> MongoDB's value over two records: RECORD and one with n = 1 and labels ["c"].
GROUP_CASES = {
    "$sum": ("$n", 8),
    "$avg": ("$n", 4.0),
    "$min": ("$n", 1),
    "$max": ("$n", 7),
    "$first": ("$n", 7),
    "$last": ("$n", 1),
    "$push": ("$n", [7, 1]),
    "$addToSet": ("$m", [3]),
}


def test_every_allowed_operator_has_a_case():
    """A new operator on the allow-list fails here until its MongoDB result is written down."""
    assert set(CASES) == set(EXPR_OPS)
    assert set(GROUP_CASES) == set(ACCUMULATORS)


def _stores():
    stores = [("embedded", True), ("mongomock://", False)]
    uri = os.environ.get("MONGODB_URI", "")
    if uri.startswith("mongodb"):
        stores.append(("MongoDB", False))
    return stores


def _collection(kind: str, records: list[dict]):
    if kind == "MongoDB":
        import pymongo

        collection = pymongo.MongoClient(os.environ["MONGODB_URI"]).context_engine_parity.records
        collection.drop()
    else:
        collection = mongomock.MongoClient().db.records
    collection.insert_many([dict(r) for r in records])
    return collection


def _run(kind: str, embedded: bool, records: list[dict], pipeline: list[dict]) -> list[dict]:
    assert validate_pipeline(pipeline, None) == [], pipeline
    store = SimpleNamespace(embedded=embedded, revision=None, collection=lambda _name: _collection(kind, records))
    return run_pipeline(store, "records", pipeline, tenant="acme", principals=[], schema=None)


@pytest.mark.parametrize("kind,embedded", _stores())
def test_each_expression_operator_runs_with_mongodbs_result(kind, embedded):
    expressions = {
        f"{op[1:]}_{i}": {op: expression} for op, cases in CASES.items() for i, (expression, _) in enumerate(cases)
    }
    expected = {f"{op[1:]}_{i}": value for op, cases in CASES.items() for i, (_, value) in enumerate(cases)}
    (row,) = _run(kind, embedded, [RECORD], [{"$project": {"_id": 0, **expressions}}])
    assert row == expected


@pytest.mark.parametrize("kind,embedded", _stores())
def test_each_accumulator_runs_with_mongodbs_result(kind, embedded):
    other = {**RECORD, "_id": "r2", "n": 1, "labels": ["c"]}
    group = {name[1:]: {name: field} for name, (field, _) in GROUP_CASES.items()}
    (row,) = _run(
        kind,
        embedded,
        [RECORD, other],
        [{"$sort": {"n": -1}}, {"$group": {"_id": None, **group}}, {"$project": {"_id": 0}}],
    )
    assert row == {name[1:]: value for name, (_, value) in GROUP_CASES.items()}


@pytest.mark.parametrize("kind,embedded", _stores())
def test_run_time_errors_are_one_line_refusals_not_crashes(kind, embedded):
    """What MongoDB refuses while running (divide by zero, a non-string to $strLenCP) is an
    ExecutionError for the planner, never NotImplementedError or a traceback."""
    for expression in (
        {"$divide": ["$n", 0]},
        {"$strLenCP": "$n"},
        {"$add": ["$d", "$d"]},
        {"$substrCP": ["$title", -1, 2]},
    ):
        with pytest.raises(ExecutionError) as raised:
            _run(kind, embedded, [RECORD], [{"$project": {"x": expression}}])
        assert "NotImplemented" not in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "expression, refusal",
    [
        ({"$week": {"date": "$d", "timezone": "Mars/Olympus"}}, "unrecognized time zone identifier 'Mars/Olympus'"),
        ({"$hour": {"date": "$d", "timezone": "$tz"}}, "timezone must be a literal string"),
        ({"$dateToString": {"format": "%Y", "date": "$d", "timezone": "+25:00"}}, "unrecognized time zone offset"),
        ({"$dateToString": {"format": "%A %Y", "date": "$d"}}, "uses %A, which MongoDB does not know"),
        ({"$dateToString": {"format": "%Y", "date": "$d", "onNull": "x"}}, "unknown onNull"),
    ],
)
def test_what_the_stores_would_read_differently_is_refused_with_a_sentence(expression, refusal):
    errors = validate_pipeline([{"$project": {"x": expression}}], None)
    assert len(errors) == 1 and refusal in errors[0], errors

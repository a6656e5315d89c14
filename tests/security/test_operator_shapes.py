"""Validator and store agree on unusual argument shapes: every operator the validator accepts, given
a null, a missing field, a scalar where an array belongs, an array of field paths, runs on the
embedded store (and `mongomock://`) with MongoDB's result or a one-line refusal, never a Python
TypeError passed on as the store's answer.

Found by the red team: mongomock returned an array expression as written (`["$title"]` came back as
the text "$title", so `{"$in": ["x", ["$title"]]}` was always false and `$group` by `["$a", "$b"]`
put every row in one group), its `$in` used Python's `in` (true == 1, a TypeError for a null or a
number in place of the array) and its `$arrayElemAt` indexed Python objects (TypeErrors for a null
array, a float index such as 0.0, a string)."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import mongomock
import pytest

from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.validate import EXPR_OPS, validate_pipeline

RECORD = {
    "_id": "r1",
    "tenant_id": "acme",
    "acl": ["*"],
    "title": "Hello",
    "n": 7,
    "m": 3,
    "f": 2.5,
    "labels": ["a", "b"],
    "d": datetime(2026, 1, 3),
    "flag": False,
    "none": None,
    "obj": {"x": 1},
}
SHAPES = [
    "$n",
    "$none",
    "$missing",
    "$obj",
    None,
    0,
    1.5,
    "x",
    True,
    [],
    {},
    [None],
    {"x": 1},
    ["$n"],
    ["$n", "$m"],
    ["$labels", "$n"],
    ["$title", None],
    [None, None],
    ["$labels", 1.5],
    ["$labels", "x"],
    ["$labels", 0.0],
    ["$obj", "$obj"],
    [True, "$n"],
    ["$n", 1e308],
    ["$labels", 2**62],
    ["$d", "$d"],
    {"date": "$none"},
    ["$title", 0, 2],
    ["$none", "$none", "$none"],
]
CRASHES = ("TypeError", "NotImplemented", "AttributeError", "KeyError", "IndexError", "ValueError", "\n")


def _run(embedded: bool, pipeline: list[dict]) -> list[dict]:
    assert validate_pipeline(pipeline, None) == [], pipeline
    collection = mongomock.MongoClient().db.records
    collection.insert_one(dict(RECORD))
    store = SimpleNamespace(embedded=embedded, revision=None, collection=lambda _name: collection)
    return run_pipeline(store, "records", pipeline, tenant="acme", principals=[], schema=None)


@pytest.mark.parametrize("embedded", [True, False])
def test_every_operator_with_every_argument_shape_answers_or_refuses_in_one_line(embedded):
    crashes = []
    for op in EXPR_OPS:
        for shape in SHAPES:
            pipeline = [{"$project": {"_id": 0, "x": {op: shape}}}]
            if validate_pipeline(pipeline, None):
                continue
            try:
                _run(embedded, pipeline)
            except ExecutionError as exc:
                if any(word in str(exc) for word in CRASHES):
                    crashes.append(f"{op} {shape!r}: {exc}")
    assert crashes == []


@pytest.mark.parametrize("embedded", [True, False])
@pytest.mark.parametrize(
    "expression, value",
    [
        (["$title", "$n", "$missing"], ["Hello", 7, None]),  # an array expression is evaluated
        ({"$in": ["Hello", ["$title", "y"]]}, True),
        ({"$in": [1, [True]]}, False),
        ({"$in": [True, [1]]}, False),
        ({"$in": [1, [1.0]]}, True),
        ({"$in": [{"x": 1}, ["$obj"]]}, True),
        ({"$in": ["$missing", [None]]}, False),
        ({"$arrayElemAt": ["$labels", 0.0]}, "a"),
        ({"$arrayElemAt": ["$labels", -1]}, "b"),
        ({"$arrayElemAt": ["$missing", 0]}, None),
        ({"$arrayElemAt": [["$title", "$n"], 1]}, 7),
        ({"$eq": [["$n"], [7]]}, True),
        ({"$not": ["$flag"]}, True),
        ({"$not": [["$flag"]]}, False),
        ({"$not": "$missing"}, True),
        ({"$size": [["$n", "$m", "$f"]]}, 3),
    ],
)
def test_unusual_shapes_get_mongodbs_result(embedded, expression, value):
    (row,) = _run(embedded, [{"$project": {"_id": 0, "x": expression}}])
    assert row == {"x": value}


@pytest.mark.parametrize("embedded", [True, False])
def test_out_of_range_element_is_missing_and_bad_arguments_are_refusals(embedded):
    assert _run(embedded, [{"$project": {"_id": 0, "x": {"$arrayElemAt": ["$labels", 5]}}}]) == [{}]
    for expression, words in (
        ({"$in": ["a", "$none"]}, "$in requires an array"),
        ({"$in": ["a", "$n"]}, "$in requires an array"),
        ({"$arrayElemAt": ["$n", 0]}, "must be an array"),
        ({"$arrayElemAt": ["$labels", 1.5]}, "32-bit integral"),
        ({"$arrayElemAt": ["$labels", "x"]}, "numeric value"),
    ):
        with pytest.raises(ExecutionError, match=None) as raised:
            _run(embedded, [{"$project": {"_id": 0, "x": expression}}])
        assert words in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("embedded", [True, False])
def test_group_by_an_array_of_fields_groups_by_their_values(embedded):
    other = {**RECORD, "_id": "r2", "n": 1}
    collection = mongomock.MongoClient().db.records
    collection.insert_many([dict(RECORD), other])
    store = SimpleNamespace(embedded=embedded, revision=None, collection=lambda _name: collection)
    pipeline = [{"$group": {"_id": ["$n", "$m"], "c": {"$sum": 1}}}, {"$sort": {"_id": 1}}]
    assert validate_pipeline(pipeline, None) == []
    rows = run_pipeline(store, "records", pipeline, tenant="acme", principals=[], schema=None)
    assert rows == [{"_id": [1, 3], "c": 1}, {"_id": [7, 3], "c": 1}]

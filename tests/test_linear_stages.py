"""`store.linear_stages`: `$unwind` and `$group` give exactly what mongomock's own handlers give (the
same rows in the same order), on the sample organisation's pipelines and on generated rows whose
keys mix the types where the shortcut must step aside (1 and 1.0, True and 1, field order)."""

from __future__ import annotations

import copy
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from mongomock.aggregate import process_pipeline

from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.sources.sample import generate
from context_engine.store import linear_stages
from context_engine.store.documents import open_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("store"), mongodb_uri=None, use_llm=False)
    ingest(settings, generate(), index=False)
    return open_store(settings)  # installs the linear stages


def _both(rows, stage):
    """(mongomock's handler's output, this module's), each over its own deep copy of `rows`."""
    name, options = next(iter(stage.items()))
    ours = {"$unwind": linear_stages._unwind, "$group": linear_stages._group}[name]
    theirs = linear_stages._MONGOMOCK[name]
    return theirs(copy.deepcopy(rows), None, options), ours(copy.deepcopy(rows), None, options)


PIPELINES = [  # what the planner writes for the sample organisation's questions, and some it could
    [{"$unwind": "$reviews"}, {"$group": {"_id": "$reviews.user.login", "count": {"$sum": 1}}}],
    [{"$unwind": {"path": "$reviews", "preserveNullAndEmptyArrays": True, "includeArrayIndex": "i"}},
     {"$group": {"_id": {"who": "$reviews.user.login", "state": "$reviews.state"}, "n": {"$sum": 1},
                 "prs": {"$addToSet": "$number"}}}],
    [{"$unwind": "$labels"}, {"$group": {"_id": "$labels.name", "first": {"$min": "$created_at"}}}],
    [{"$match": {"merged": True}},
     {"$group": {"_id": {"$dateToString": {"format": "%G-W%V", "date": "$merged_at"}}, "count": {"$sum": 1}}}],
    [{"$group": {"_id": "$merged", "count": {"$sum": 1}}}],
    [{"$group": {"_id": "$repo", "avg": {"$avg": "$additions"}, "last": {"$max": "$updated_at"}}}],
    [{"$group": {"_id": None, "count": {"$sum": 1}}}],
]


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda p: " ".join(next(iter(s)) for s in p))
def test_sample_pipelines_give_mongomocks_rows(store, pipeline):
    rows = list(store.collection("pull_requests").find({"tenant_id": "acme"}))
    for stage in pipeline:
        if "$match" in stage:
            rows = list(process_pipeline(rows, None, [stage], None))
            continue
        theirs, ours = _both(rows, stage)
        assert ours == theirs and [list(r) for r in ours] == [list(r) for r in theirs]  # field order too
        rows = theirs
    assert rows


def test_unwind_copies_are_independent_and_the_input_is_unchanged():
    doc = {"_id": 1, "meta": {"tags": ["a"]}, "items": [{"k": 1}, {"k": 2}], "alias": None}
    doc["alias"] = doc["items"]  # the same list under two names: the other name keeps the whole list
    before = copy.deepcopy(doc)
    out = linear_stages._unwind([doc], None, "$items")
    assert [row["items"] for row in out] == [{"k": 1}, {"k": 2}]
    assert [row["alias"] for row in out] == [[{"k": 1}, {"k": 2}]] * 2
    out[0]["meta"]["tags"].append("b")
    assert out[1]["meta"]["tags"] == ["a"] and doc == before and doc["alias"] is doc["items"]


TIED_KEYS = [  # keys equal in BSON but not alike, and keys alike in Python but not in BSON
    [1.0, 1, 1.0, 2],
    [0, 0.0, 0, True, 1, True],
    [{"x": 1, "y": 2}, {"y": 2, "x": 1}, {"x": 1, "y": 2}],
    [[1, 2], [1.0, 2], "a", [1, 2]],
]


@pytest.mark.parametrize("keys", TIED_KEYS, ids=str)
def test_keys_that_tie_group_as_mongomock_groups_them(keys):
    rows = [{"k": key, "v": i} for i, key in enumerate(keys)]
    theirs, ours = _both(rows, {"$group": {"_id": "$k", "n": {"$sum": 1}, "vs": {"$push": "$v"}}})
    assert ours == theirs and [type(r["_id"]) for r in ours] == [type(r["_id"]) for r in theirs]


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]),
                    st.sampled_from(["a", "b", ""]), st.just(datetime(2026, 11, 30)))
KEYS = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)), max_leaves=4)
ROWS = st.lists(st.fixed_dictionaries({"k": KEYS, "v": st.integers(0, 9),
                                       "arr": st.one_of(st.none(), st.integers(), st.lists(KEYS, max_size=3))},
                                      optional={"m": st.integers()}), max_size=12)


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS)
def test_generated_rows_group_and_unwind_as_mongomock_does(rows):
    for stage in ({"$group": {"_id": "$k", "n": {"$sum": 1}, "vs": {"$push": "$v"}}},
                  {"$group": {"_id": {"a": "$k", "b": "$m"}, "n": {"$sum": "$v"}}},
                  {"$unwind": "$arr"},
                  {"$unwind": {"path": "$arr", "preserveNullAndEmptyArrays": True, "includeArrayIndex": "idx"}}):
        theirs, ours = _both(rows, stage)
        assert ours == theirs and [list(r) for r in ours] == [list(r) for r in theirs]

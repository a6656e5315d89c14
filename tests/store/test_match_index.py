"""The embedded store's secondary indexes give exactly mongomock's `find()`: same rows, same order."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest

from context_engine.config import Settings
from context_engine.store.bounded import Bounds, _copies, _stored_matches, run_embedded
from context_engine.store.documents import open_store
from context_engine.store.match_index import candidates


@pytest.fixture(scope="module")
def store(sample_records_dir):
    return open_store(Settings(data_dir=sample_records_dir, mongodb_uri=None, use_llm=False))


OCT = datetime(2026, 10, 1)
NOV = datetime(2026, 11, 23)
QUERIES = {
    "pull_requests": [
        {"tenant_id": "acme", "state": "open"},
        {"tenant_id": "acme", "acl": {"$in": ["*", "github:rsh-dev"]}, "merged": True, "merged_at": {"$gte": NOV}},
        {"user.login": "rsh-dev", "merged_at": {"$gte": NOV, "$lt": datetime(2026, 11, 30)}},
        {"labels.name": "security", "state": "open"},
        {"labels.name": {"$in": ["security", "bug"]}, "repo": {"$eq": "acme/payments"}},
        {"reviews.user.login": "larsn", "created_at": {"$gt": OCT}},
        {"reviews.user.login": {"$exists": True, "$ne": None}, "repo": "acme/payments"},
        {"$and": [{"repo": "acme/web"}, {"created_at": {"$lte": OCT}}], "tenant_id": "acme"},
        {"$or": [{"repo": "acme/web"}, {"state": "open"}]},
        {"merged_at": None},
        {"number": 812},
        {"number": "812"},
        {"repo": "acme/payments", "state": "closed", "merged": True},
        {"number": {"$in": [812, 1377, 99999]}, "tenant_id": "globex"},
        {"title": {"$regex": "redis", "$options": "i"}, "tenant_id": "acme"},
        {"repo": "no/such-repo"},
        {"merged_at": {"$gte": datetime(2030, 1, 1)}},
        {},
    ],
    "issues": [
        {"fields.assignee.name": "rkhan", "fields.status.name": {"$in": ["To Do", "In Progress", "In Review"]}},
        {"fields.labels": "security", "tenant_id": "acme"},
        {"key": "ENG-231"},
        {"fields.labels": {"$in": ["security"]}, "key": {"$eq": "ENG-231"}},
        {"key": {"$in": ["ENG-231", "ENG-232"]}, "fields.status.name": {"$nin": ["Done"]}},
        {"fields.assignee.name": "rkhan", "fields.status.name": {"$nin": ["Done", "Won't Do"]}},
        {"tenant_id": "acme", "fields.labels": {"$nin": ["security"]}, "fields.nothing": {"$nin": ["x"]}},
        {"fields.assignee.name": "rkhan", "fields.status.name": {"$nin": ["Done"], "$exists": True}},
    ],
    "messages": [
        {"channel": "incidents", "date": {"$gte": datetime(2026, 9, 1), "$lt": OCT}},
        {"user": {"$in": ["nobody"]}},
    ],
}


def _find(collection, query, revision):
    bounds = Bounds()
    return list(_copies(_stored_matches(collection, query, revision, bounds, bounds.deadline()), None))


@pytest.mark.parametrize("name,query", [(n, q) for n, qs in QUERIES.items() for q in qs])
def test_same_rows_same_order_as_a_scan(store, name, query):
    collection = store.collection(name)
    expected = list(collection.find(query))
    assert _find(collection, query, store.revision) == expected


PIPELINES = [
    (
        "pull_requests",
        [
            {"$match": {"merged": True, "merged_at": {"$gte": OCT}}},
            {"$group": {"_id": {"$dateToString": {"format": "%G-W%V", "date": "$merged_at"}}, "count": {"$sum": 1}}},
            {"$sort": {"_id": 1}},
        ],
    ),
    (
        "pull_requests",
        [
            {"$match": {"repo": "acme/payments"}},
            {"$unwind": "$reviews"},
            {"$match": {"reviews.user.login": {"$exists": True, "$ne": None}}},
            {"$group": {"_id": "$reviews.user.login", "count": {"$sum": 1}}},
            {"$sort": {"count": -1, "_id": 1}},
            {"$limit": 5},
        ],
    ),
    (
        "pull_requests",
        [
            {"$match": {"state": "open"}},
            {"$sort": {"created_at": -1}},
            {"$skip": 2},
            {"$limit": 7},
            {"$project": {"title": 1, "n": {"$size": "$labels"}}},
        ],
    ),
    (
        "pull_requests",
        [
            {"$match": {"tenant_id": "acme"}},
            {"$group": {"_id": "$repo", "first": {"$first": "$$ROOT"}}},
            {"$sort": {"_id": 1}},
        ],
    ),
    ("issues", [{"$match": {"fields.assignee.name": "rkhan"}}, {"$sort": {"fields.updated": -1}}, {"$limit": 200}]),
    ("messages", [{"$sort": {"date": 1}}, {"$limit": 3}]),
    ("messages", [{"$match": {"channel": "incidents"}}, {"$count": "n"}]),
]


@pytest.mark.parametrize("name,pipeline", PIPELINES)
def test_pipelines_same_as_without_indexes(store, name, pipeline):
    collection = store.collection(name)
    expected = run_embedded(collection, pipeline, Bounds())  # no revision: mongomock's find, every field
    assert run_embedded(collection, pipeline, Bounds(), revision=store.revision) == expected
    assert list(collection.aggregate(pipeline)) == expected


def test_narrows_and_follows_writes(store):
    collection = store.collection("pull_requests")
    found, rest = candidates(
        collection,
        {"tenant_id": "acme", "user.login": "rsh-dev", "state": {"$nin": ["x"]}, "number": 812},
        store.revision,
    )
    assert 0 < len(found) < collection.count_documents({}) / 5
    # string equality and exclusion are answered by the index; anything else is checked by the matcher
    assert rest == {"number": 812}
    assert candidates(collection, {"$or": [{"state": "open"}]}, store.revision) is None  # nothing to narrow by
    record = dict(next(collection.find({"number": 812, "repo": "acme/infra"}, {"_id": 0, "tenant_id": 0})))
    before = store.revision
    store.upsert("pull_requests", "acme", [{**record, "state": "reopened-for-test"}])
    assert store.revision != before
    rows = _find(collection, {"state": "reopened-for-test"}, store.revision)
    assert [r["ref"] for r in rows] == [record["ref"]]
    store.upsert("pull_requests", "acme", [record])
    assert _find(collection, {"state": "reopened-for-test"}, store.revision) == []


def test_every_pair_of_sample_values(store):
    """Equality on every (field, value) pair of a few fields, alone and combined, against a scan."""
    collection = store.collection("pull_requests")
    values = {
        field: sorted({str(v) for v in collection.distinct(field) if isinstance(v, str)})[:6]
        for field in ("repo", "state", "user.login", "labels.name")
    }
    for (f1, v1s), (f2, v2s) in itertools.combinations(values.items(), 2):
        for v1, v2 in itertools.product(v1s[:3], v2s[:3]):
            query = {f1: v1, f2: v2}
            assert _find(collection, query, store.revision) == list(collection.find(query)), query

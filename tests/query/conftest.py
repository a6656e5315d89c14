"""What the planner tests share: the sample organisation's catalog, a question resolved against it, small
worlds of hand-made records to run plans on, and the ratchet of the question sets."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from context_engine.config import Settings
from context_engine.query.catalog import Catalog
from context_engine.query.compile import compile_plan
from context_engine.query.engine import resolve
from context_engine.query.execute import run_pipeline
from context_engine.query.ir import PlanIR
from context_engine.query.offline import OfflinePlanner
from context_engine.query.plan import Plan, PlanningContext
from context_engine.query.schema import schema_from_documents
from context_engine.query.validate import validate_pipeline
from context_engine.resources import catalog_for
from context_engine.store.documents import open_store
from tests.conftest import NOW, TEST_DATA_DIR

# Per question file (by stem), the ids the offline planner answered right when it was recorded.
RATCHET = json.loads((TEST_DATA_DIR / "ratchet.json").read_text())


def lost(report, name: str) -> list[tuple[str, str, str]]:
    """The questions of `name` that passed when the ratchet was recorded and fail now: a planner change may
    win questions (add their ids to tests/data/ratchet.json), never lose one."""
    failing = {r.id: r for r in report.results if not r.correct}
    assert {r.id for r in report.results} >= set(RATCHET[name]), "a ratchet id is no longer in the question file"
    return [(i, failing[i].question, failing[i].detail) for i in RATCHET[name] if i in failing]


@pytest.fixture
def catalog(settings):
    return catalog_for(settings)


def context(catalog, question: str) -> PlanningContext:
    """The planning context of a question that resolves (people and times found, nobody unknown)."""
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None, failed
    return ctx


def plan(catalog, question: str) -> Plan:
    """The offline planner's plan of a question that resolves, on `catalog` (the sample organisation's)."""
    return OfflinePlanner().plan(context(catalog, question))


def hand_made_world(data_dir, collections: dict[str, list[dict]], people: list[dict]):
    """(store, catalog) of tenant "t" holding `collections`, every record readable by everyone."""
    store = open_store(Settings(data_dir=data_dir, mongodb_uri=None))
    for name, docs in collections.items():
        store.upsert(name, "t", [{**doc, "acl": ["*"]} for doc in docs])
    catalog = Catalog("t", {name: schema_from_documents(name, docs) for name, docs in collections.items()}, people)
    return store, catalog


ISSUES = [  # a GitHub-shaped issue collection: labels and reviews are arrays of objects
    {
        "ref": "a#1",
        "state": "open",
        "title": "one",
        "created_at": datetime(2026, 1, 5),
        "closed_at": None,
        "milestone": {"title": "v1"},
        "assignee": {"login": "ann"},
        "comments": 3,
        "labels": [{"name": "bug"}],
        "reviews": [{"user": {"login": "ann"}, "submitted_at": datetime(2026, 1, 6)}],
    },
    {
        "ref": "a#2",
        "state": "closed",
        "title": "",
        "created_at": datetime(2026, 1, 20),
        "closed_at": datetime(2026, 2, 1),
        "milestone": None,
        "assignee": None,
        "comments": 0,
        "labels": [],
        "reviews": [
            {"user": {"login": "bob"}, "submitted_at": datetime(2026, 1, 6)},
            {"user": {"login": "ann"}, "submitted_at": datetime(2026, 3, 1)},
        ],
    },
    {
        "ref": "a#3",
        "state": "open",
        "title": "three",
        "created_at": datetime(2026, 2, 3),
        "closed_at": None,
        "comments": 7,
        "labels": [{"name": "bug"}, {"name": "docs"}],
        "reviews": [],
    },
    {
        "ref": "a#4",
        "state": "closed",
        "title": "four",
        "created_at": datetime(2026, 2, 14),
        "closed_at": datetime(2026, 2, 15),
        "milestone": {"title": "v1"},
        "assignee": {"login": "bob"},
        "comments": 1,
        "labels": [{"name": "docs"}],
        "reviews": [{"user": {"login": "bob"}, "submitted_at": datetime(2026, 2, 15)}],
    },
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The issues above in an embedded store (tenant "t", readable by everyone)."""
    store = open_store(Settings(data_dir=tmp_path_factory.mktemp("compile"), mongodb_uri=None))
    store.upsert("issues", "t", [{**doc, "acl": ["*"]} for doc in ISSUES])
    return store


@pytest.fixture(scope="module")
def schema():
    return schema_from_documents("issues", ISSUES)


def run(ir: PlanIR, store, schema) -> list[dict]:
    pipeline = compile_plan(ir, schema)
    assert validate_pipeline(pipeline, schema) == []
    return run_pipeline(store, "issues", pipeline, tenant="t", principals=[], schema=schema)


def refs(ir, store, schema) -> list[str]:
    return sorted(r["ref"] for r in run(ir, store, schema))

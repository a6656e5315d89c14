"""What the planner tests share: the sample organisation's catalog, a question resolved against it, and
small worlds of hand-made records to run plans on."""

from __future__ import annotations

import pytest

from context_engine.config import Settings
from context_engine.query.catalog import Catalog
from context_engine.query.engine import resolve
from context_engine.query.plan import PlanningContext
from context_engine.query.schema import schema_from_documents
from context_engine.runtime import catalog_for
from context_engine.store.documents import open_store
from tests.conftest import NOW


@pytest.fixture
def catalog(settings):
    return catalog_for(settings)


def context(catalog, question: str) -> PlanningContext:
    """The planning context of a question that resolves (people and times found, nobody unknown)."""
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None
    return ctx


def hand_made_world(data_dir, collections: dict[str, list[dict]], people: list[dict]):
    """(store, catalog) of tenant "t" holding `collections`, every record readable by everyone."""
    store = open_store(Settings(data_dir=data_dir, mongodb_uri=None))
    for name, docs in collections.items():
        store.upsert(name, "t", [{**doc, "acl": ["*"]} for doc in docs])
    catalog = Catalog("t", {name: schema_from_documents(name, docs) for name, docs in collections.items()}, people)
    return store, catalog

"""The pymongo path: against a real MongoDB server when MONGODB_URI is set, otherwise against the
in-process stand-in (`mongomock://`, the same pymongo calls, no server), so CI exercises the path too.
A developer with a server runs it with `MONGODB_URI=mongodb://localhost:27017 make test`.
"""

import os
import uuid
from datetime import datetime

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.query.engine import NoResults, Success
from context_engine.resources import store_for

pytestmark = pytest.mark.mongodb
MONGODB_URI = os.environ.get("MONGODB_URI") or "mongomock://test-mongodb-path"


@pytest.fixture(scope="module")
def mongo_settings(tmp_path_factory):
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    settings = Settings(
        data_dir=tmp_path_factory.mktemp("mongo"),
        mongodb_uri=MONGODB_URI,
        mongodb_db=f"context_engine_test_{uuid.uuid4().hex[:8]}",
        tenant="acme",
        use_llm=False,
    )
    ingest(settings, generate())
    yield settings
    store_for(settings).db.client.drop_database(settings.mongodb_db)


def test_same_answers_through_pymongo(mongo_settings):
    result = run_structured(
        "PRs Rashid merged last week", mongo_settings.with_overrides(asker="rsh-dev"), now=datetime(2026, 11, 30, 12)
    )
    assert isinstance(result, Success) and all(r["user"]["login"] == "rsh-dev" for r in result.rows)
    assert not any(k in r for r in result.rows for k in ("tenant_id", "acl", "_id"))


def test_reingest_does_not_duplicate_on_mongodb(mongo_settings):
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    before = store_for(mongo_settings).collection("pull_requests").count_documents({})
    ingest(mongo_settings, generate())
    assert store_for(mongo_settings).collection("pull_requests").count_documents({}) == before


def test_other_tenant_invisible_on_mongodb(mongo_settings):
    result = run_structured("PRs about DynamoDB", mongo_settings, now=datetime(2026, 11, 30, 12))
    assert isinstance(result, NoResults) or all("globex" not in r.get("ref", "") for r in result.rows)

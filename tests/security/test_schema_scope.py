"""Class 10: what the planner and `schema` show is computed only from what the asker may read.

A private channel's name, its members' text as examples, and any field only private records have
must not reach the schema (and so the planner prompt) of someone outside the channel."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.query.catalog import load_catalog
from context_engine.resources import catalog_for, forget, principals_for
from context_engine.store.documents import open_store

SECRET_CHANNEL = "zz-merger-talks"
SECRET_WORD = "bellerophon"
# Stated as the sample corpus states people: one operator record with all of a person's accounts.
MEMBER = {"login": "mallory-m", "name": "Mallory Member", "slack_id": "U0MEMBER1", "source": "sample"}
OUTSIDER = {"login": "oscar-o", "name": "Oscar Outsider", "slack_id": "U0OUTSID1", "source": "sample"}


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    settings = Settings(data_dir=tmp_path_factory.mktemp("schema-scope"), mongodb_uri=None, tenant="t1", use_llm=False)
    public = [
        {
            "channel": "general",
            "channel_id": "C1",
            "user": "U0OUTSID1",
            "ts": f"1700000{i:03d}.000100",
            "text": f"standup notes {i}",
            "acl": ["*"],
        }
        for i in range(5)
    ]
    private = [
        {
            "channel": SECRET_CHANNEL,
            "channel_id": "G9",
            "user": "U0MEMBER1",
            "ts": f"1700001{i:03d}.000100",
            "text": f"{SECRET_WORD} due diligence {i}",
            "deal_code": f"{SECRET_WORD}-{i}",
            "acl": ["slack:U0MEMBER1"],
        }
        for i in range(5)
    ]
    ingest(settings, {"t1": {"messages": public + private, "people": [MEMBER, OUTSIDER]}}, index=False)
    return settings


def _text(catalog) -> str:
    return json.dumps({n: s.to_json() for n, s in catalog.schemas.items()}) + "".join(
        s.describe() for s in catalog.schemas.values()
    )


@pytest.mark.parametrize("asker", [None, "oscar-o", "U0OUTSID1"])  # a display name is no asker (test_asker_exact)
def test_outsiders_never_see_private_names_values_or_fields(settings, asker):
    forget(settings)
    catalog = catalog_for(settings.with_overrides(asker=asker))
    text = _text(catalog)
    assert "general" in text
    assert SECRET_CHANNEL not in text and SECRET_WORD not in text and "deal_code" not in text


def test_a_member_sees_the_private_channel(settings):
    forget(settings)
    member = settings.with_overrides(asker="mallory-m")
    assert principals_for(member) == ["github:mallory-m", "slack:U0MEMBER1"]
    text = _text(catalog_for(member))
    assert SECRET_CHANNEL in text and "deal_code" in text


def test_cached_catalog_is_used_only_for_its_own_tenant_and_access_set(settings):
    store = open_store(settings)
    member = load_catalog(store, settings, "t1", ["slack:U0MEMBER1"])
    assert SECRET_CHANNEL in _text(member)
    # The member's cached view never answers for the public view, another access set or tenant.
    assert SECRET_CHANNEL not in _text(load_catalog(store, settings, "t1"))
    assert SECRET_CHANNEL not in _text(load_catalog(store, settings, "t1", ["slack:U0OUTSID1"]))
    assert load_catalog(store, settings, "t2").schemas == {}


def test_a_tampered_cache_for_another_tenant_is_rebuilt(settings):
    store = open_store(settings)
    path = settings.data_dir / "catalog" / "t2.json"
    load_catalog(store, settings, "t2")
    stolen = json.loads((settings.data_dir / "catalog" / "t1.json").read_text())
    path.write_text(json.dumps(stolen))  # t1's catalog written under t2's name
    assert load_catalog(store, settings, "t2").schemas == {}


def test_schema_command_is_access_filtered(settings):
    def schema(*extra: str) -> str:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "context_engine.cli",
                "schema",
                "--data-dir",
                str(settings.data_dir),
                "--tenant",
                "t1",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert SECRET_CHANNEL not in schema() and SECRET_CHANNEL not in schema("--as", "oscar-o")
    assert SECRET_CHANNEL in schema("--as", "mallory-m")


@pytest.mark.parametrize("asker", [None, "rsh-dev", "zwei-dev"])
def test_discovery_answered_by_sqlite_equals_discovery_in_memory(sample_dir, asker):
    """A fresh process discovers an asker's schemas from the committed rows through SQLite, without
    loading any collection; the catalog is exactly the one discovered over the loaded collections."""
    from context_engine.kinds import BUILTIN_NAMES as COLLECTIONS
    from context_engine.query.catalog import build_catalog

    settings = Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", asker=asker, use_llm=False)
    principals = principals_for(settings)
    fresh = open_store(settings)
    from_sqlite = build_catalog(fresh, "acme", principals)
    assert fresh._unread == set(COLLECTIONS) - {"people"}  # only the people directory was loaded
    loaded = open_store(settings)
    for name in COLLECTIONS:
        loaded.collection(name)
    in_memory = build_catalog(loaded, "acme", principals)
    assert from_sqlite.to_json() == in_memory.to_json()
    assert from_sqlite.schemas["messages"].total > 0 and "labels.name" in from_sqlite.schemas["pull_requests"].fields

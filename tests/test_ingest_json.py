"""A team's own collections: the store's kinds (`save_kind`, `kinds`), `ingest json`, `ingest mongodb`,
and what every surface then does with them (schema, query, ask), access included."""

import pytest

from context_engine.config import Settings
from context_engine.kinds import CollectionSpec, SpecError
from context_engine.query.catalog import build_catalog
from context_engine.store.documents import StoreError, open_store

INCIDENTS = CollectionSpec(name="incidents", noun="incident", key="id", ref_prefix="INC-",
                           times={"created": ("opened_at",)}, text=("title",))


def _embedded(tmp_path):
    return Settings(data_dir=tmp_path, mongodb_uri=None)


# ---------------------------------------------------------------------------------------- the store
@pytest.mark.parametrize("uri", [None, "mongomock://own-kinds"])
def test_a_kind_is_committed_with_its_records_and_seen_by_a_new_process(tmp_path, uri):
    settings = Settings(data_dir=tmp_path, mongodb_uri=uri)
    store = open_store(settings)
    store.save_kind("acme", INCIDENTS)
    store.upsert("incidents", "acme", [{"ref": "INC-1", "id": 1, "title": "db down", "acl": ["*"]}])
    store.commit()
    fresh = open_store(settings)
    if uri is None:
        assert "incidents" in fresh._unread  # read lazily like a built-in collection
    assert fresh.kinds("acme").get("incidents") == INCIDENTS
    assert "incidents" not in fresh.kinds("globex")  # a kind is one tenant's
    assert "incidents" in fresh.collections() and "collection_kinds" not in fresh.collections()
    assert [d["ref"] for d in fresh.collection("incidents").find({"tenant_id": "acme"})] == ["INC-1"]
    assert fresh.tenants() == ["acme"]
    assert fresh.damaged_rows() == {}


def test_an_uncommitted_kind_is_not_seen_elsewhere(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    assert "incidents" in store.kinds("acme")
    assert "incidents" not in open_store(_embedded(tmp_path)).kinds("acme")


def test_a_new_spec_replaces_the_stored_one(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.commit()
    renamed = CollectionSpec(name="incidents", noun="outage", key="id")
    store.save_kind("acme", renamed)
    store.commit()
    assert open_store(_embedded(tmp_path)).kinds("acme").get("incidents") == renamed


@pytest.mark.parametrize("name", ["pull_requests", "people", "collection_kinds", "store_meta", "index_vectors"])
def test_a_builtin_or_reserved_name_is_never_a_tenants_own(tmp_path, name):
    store = open_store(_embedded(tmp_path))
    with pytest.raises(SpecError, match="taken by the engine"):
        store.save_kind("acme", CollectionSpec(name=name, noun="thing", key="id"))


@pytest.mark.parametrize("name", ["collection_kinds", "incidents", "system.x", "$where", "a.b", "", None, ["x"]])
def test_only_known_collections_are_handed_out(tmp_path, name):
    store = open_store(_embedded(tmp_path))
    with pytest.raises(StoreError, match="unknown collection"):
        store.collection(name)
    with pytest.raises(StoreError, match="unknown collection"):
        store.scoped(name, {"tenant_id": "acme", "acl": {"$in": ["*"]}})


def test_records_go_only_to_a_kind_of_their_tenant(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    with pytest.raises(StoreError, match="not a kind of tenant 'globex'"):
        store.upsert("incidents", "globex", [{"ref": "INC-1"}])


def test_a_damaged_stored_spec_leaves_out_that_kind_only(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.save_kind("acme", CollectionSpec(name="deploys", noun="deploy", key="id"))
    store.commit()
    store.file.conn.execute("UPDATE docs SET body = json_set(body, '$.spec.key', '$bad') "
                            "WHERE coll = 'collection_kinds' AND body LIKE '%incidents%'")
    assert [s.name for s in open_store(_embedded(tmp_path)).kinds("acme").own()] == ["deploys"]


def test_the_catalog_discovers_own_kinds_with_their_spec(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.upsert("incidents", "acme", [{"ref": "INC-1", "id": 1, "title": "db down", "acl": ["*"]},
                                       {"ref": "INC-2", "id": 2, "title": "secret", "acl": ["github:dana"]}])
    store.commit()
    fresh = open_store(_embedded(tmp_path))
    schema = build_catalog(fresh, "acme").schemas["incidents"]
    assert schema.own_kind == INCIDENTS and schema.kind.noun == "incident"
    assert schema.total == 1  # the private one is not counted for the public view
    assert build_catalog(fresh, "acme", ["github:dana"]).schemas["incidents"].total == 2
    assert "incidents" not in build_catalog(fresh, "globex").schemas

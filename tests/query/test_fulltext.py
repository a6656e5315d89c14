"""`$text` reads the full-text index ingest built (query/fulltext.py): no new process tokenizes a
collection for its first question, a stale index loses to the store, and the index never widens access."""

import copy
import shutil

import pytest

from context_engine.config import Settings
from context_engine.query import fulltext
from context_engine.query.execute import run_pipeline
from context_engine.query.fulltext import word_forms
from context_engine.query.topic_words import spelling_variants
from context_engine.resources import catalog_for
from context_engine.sources.sample import STORIES
from context_engine.store.documents import open_store
from context_engine.text import tokenize

DOUBLE_CHARGE_PR = STORIES["payments_double_charge"]["pr"]


@pytest.fixture
def data_dir(sample_dir, tmp_path):
    """A copy of the session's sample data dir: these tests write to it."""
    copied = tmp_path / "data"
    shutil.copytree(sample_dir, copied)
    return copied


@pytest.fixture
def no_fitting(monkeypatch):
    """A process that reads the persisted index: fitting one from the records fails the test."""
    monkeypatch.setattr(fulltext, "_CACHE", {})
    calls = []
    real = fulltext._fit
    monkeypatch.setattr(fulltext, "_fit", lambda *a: calls.append(a[1:]) or real(*a))
    return calls


def _text_refs(data_dir, search, principals=(), collection="pull_requests"):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    store = open_store(settings)
    # Ranked by relevance: the search over all the text that ingest indexes (a topic inside a structured
    # question reads the records' titles instead: tests/query/planner/test_topic.py).
    rows = run_pipeline(
        store,
        collection,
        [{"$match": {"$text": {"$search": search}}}, {"$sort": {"score": {"$meta": "textScore"}}}],
        tenant="acme",
        principals=list(principals),
        schema=catalog_for(settings).schemas[collection],
    )
    return [r["ref"] for r in rows], store


def test_ingest_builds_the_index_and_a_new_process_reads_it_without_fitting(data_dir, no_fitting):
    manifest = fulltext._read_manifest(data_dir / "fulltext" / "acme" / "pull_requests")
    assert manifest is not None and manifest[1]["fields"] == ["title", "body", "reviews.body", "review_comments.body"]
    refs, _ = _text_refs(data_dir, "重复扣款")
    assert DOUBLE_CHARGE_PR in refs
    assert no_fitting == []  # served from the file ingest wrote


def test_the_persisted_index_ranks_as_the_one_fitted_in_memory(data_dir, no_fitting):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    store = open_store(settings)
    fields = catalog_for(settings).schemas["pull_requests"].text_fields
    persisted = fulltext.text_index(store, "pull_requests", "acme", fields)
    fitted = fulltext._fit(store.collection("pull_requests"), "acme", fields)
    for query in ("session cache redis", "duplicate charges", "重复扣款", "flaky tests"):
        assert persisted.search(query) == fitted.search(query), query


def test_a_record_written_after_the_index_is_found_the_store_wins(data_dir, no_fitting):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    store = open_store(settings)
    (pr,) = [copy.deepcopy(r) for r in store.collection("pull_requests").find({"ref": "acme/payments#1384"})]
    pr = {k: v for k, v in pr.items() if k not in ("_id", "tenant_id")}
    pr["title"] = "Fix the zyxwquux regression"
    store.upsert("pull_requests", "acme", [pr])
    store.commit()  # a webhook's write: committed, the full-text index not synced
    refs, _ = _text_refs(data_dir, "zyxwquux")
    assert refs == ["acme/payments#1384"]
    assert no_fitting  # the stale index was not used


def test_the_index_never_widens_access(data_dir, no_fitting):
    # The leaked-key thread is readable by its channel's members only; its words are in the index all the same.
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    (thread,) = (
        open_store(settings)
        .collection("messages")
        .find({"tenant_id": "acme", "ts": STORIES["leaked_stripe_key"]["thread"]["ts"]})
    )
    member = thread["acl"][0]
    assert "*" not in thread["acl"]
    ids = fulltext.text_ids(
        open_store(settings),
        "messages",
        "acme",
        catalog_for(settings).schemas["messages"].text_fields,
        "Stripe secret key gist",
    )
    assert thread["_id"] in ids  # proposed by the index ...
    readers, _ = _text_refs(data_dir, "Stripe secret key gist", principals=[member], collection="messages")
    outsiders, _ = _text_refs(data_dir, "Stripe secret key gist", principals=["slack:U0NOBODY"], collection="messages")
    assert thread["ref"] in readers and thread["ref"] not in outsiders  # ... and kept only for those who may read it


@pytest.mark.parametrize("pointer", ["../../../etc", "build-not-hex", ""])
def test_a_tampered_pointer_is_no_index(data_dir, no_fitting, pointer):
    (data_dir / "fulltext" / "acme" / "pull_requests" / "CURRENT").write_text(pointer)
    refs, _ = _text_refs(data_dir, "重复扣款")
    assert DOUBLE_CHARGE_PR in refs and no_fitting  # fitted from the store instead


def test_a_tenant_reads_only_its_own_index(data_dir, no_fitting):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="globex", use_llm=False)
    store = open_store(settings)
    fields = catalog_for(settings).schemas["pull_requests"].text_fields
    acme_ids = set(fulltext.text_index(store, "pull_requests", "acme", fields).ids)
    globex_ids = set(fulltext.text_index(store, "pull_requests", "globex", fields).ids)
    assert acme_ids and globex_ids and not acme_ids & globex_ids
    with pytest.raises(ValueError):
        fulltext._root(store, "../acme", "pull_requests")


def test_a_compound_is_found_inside_longer_ones_and_only_as_written(tmp_path):
    from tests.query.conftest import hand_made_world

    texts = [
        "try sqlx.pool.timeout here",  # inside a longer dotted name
        "the pool.timeout-ish setting",  # before a hyphen
        "pool.timeout",
        "the pool has a timeout",  # its parts, apart: not the compound
        "_pool.timeout_ in italics",  # inside an identifier
    ]
    messages = [{"ref": f"m{i}", "text": t, "user": "U1"} for i, t in enumerate(texts)]
    store, _ = hand_made_world(tmp_path, {"messages": messages}, [])
    ids = fulltext.text_ids(store, "messages", "t", ["text"], '"pool.timeout"', subject="text")
    found = {d["ref"] for d in store.collection("messages").find({"_id": {"$in": ids}}, {"ref": 1})}
    assert found == {"m0", "m1", "m2"}
    # unquoted, the same way
    ids = fulltext.text_ids(store, "messages", "t", ["text"], "sqlx.pool", subject="text")
    assert {d["ref"] for d in store.collection("messages").find({"_id": {"$in": ids}}, {"ref": 1})} == {"m0"}


@pytest.mark.parametrize(
    "word,other", [("licences", "licenses"), ("color", "colour"), ("normalisation", "normalization"), ("commit", None)]
)
def test_a_word_has_its_other_spelling_and_both_are_one_search_token(word, other):
    assert spelling_variants(word) == ([other] if other else [])
    if other:
        (token,) = tokenize(word)
        (other_token,) = tokenize(other)
        assert other_token in word_forms(token)

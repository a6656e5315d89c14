"""The persisted per-tenant semantic index: incremental sync, crash safety, tenant and ACL isolation,
Chinese search. Real embeddings (the default model); the embedding cache is shared by the whole test session so
each text is embedded once (a cold run embeds about 60 short texts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from context_engine.config import Settings, TenantError
from context_engine.ingest import ingest
from context_engine.retrievers import index as index_module
from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.chunking import chunk_collection, embedding_text
from context_engine.retrievers.dense import make_embeddings
from context_engine.retrievers.index import IndexDamaged, IndexMissing, SemanticIndex, index_dir, sync_index
from context_engine.sources.normalize import normalize
from context_engine.sources.sample import STORIES, generate
from context_engine.store.documents import open_store
from context_engine.text import TOKENIZATION

OUTSIDER = ["github:zwei-dev", "slack:U0BE63B36E"]  # an acme member who is not


@pytest.fixture(scope="session")
def embed_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.getbasetemp() / "semantic-index-embeddings.sqlite"


@pytest.fixture(scope="module")
def query_embeddings():
    return make_embeddings(Settings().embedding_model)


def _settings(data_dir: Path, embed_cache: Path, tenant: str = "t1") -> Settings:
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant=tenant, embedding_cache=embed_cache, use_llm=False)


def _doc(doc_id: str, title: str, body: str, acl: list[str] | None = None) -> dict:
    return {"doc_id": doc_id, "title": title, "body": body, "acl": acl or ["*"]}


DOCS = [
    _doc("D1", "Session cache", "We moved the session cache from Memcached to Redis for persistence."),
    _doc("D2", "Payments retries", "Retried payment callbacks caused duplicate charges; we added idempotency keys."),
    _doc("D3", "Mobile release", "The Android release train ships every second Tuesday."),
]


def _refs(docs) -> list[str]:
    return [d.metadata["doc_ref"] for d in docs]


# ------------------------------------------------------------------------------ sync
def test_incremental_sync_adds_updates_deletes_and_resync_embeds_nothing(tmp_path, embed_cache, query_embeddings):
    settings = _settings(tmp_path, embed_cache)
    (report,) = ingest(settings, {"t1": {"documents": DOCS}})
    first = report.index
    assert (first.chunks, first.added, first.updated, first.removed) == (3, 3, 0, 0)
    assert first.embedded + first.cache_hits == 3
    index = SemanticIndex.load(settings, "t1", embeddings=query_embeddings)
    assert (
        index.manifest["chunks"] == 3
        and index.manifest["model"] == Settings().embedding_model
        and index.manifest["fingerprint"]
    )
    assert _refs(index.search_bm25("memcached redis", 3, []))[0] == "D1"

    store = open_store(settings)
    again = sync_index(store, "t1", settings)
    assert (again.added, again.updated, again.removed, again.embedded, again.cache_hits) == (0, 0, 0, 0, 0)
    assert again.generation == first.generation  # nothing changed: no new generation written

    # D2 rewritten, D3 made private (metadata only), D4 new, D1 deleted.
    store.upsert(
        "documents",
        "t1",
        [
            normalize("documents", d)
            for d in (
                _doc("D2", "Payments retries", "Webhook retries are now deduplicated by the Stripe event id."),
                _doc("D3", "Mobile release", DOCS[2]["body"], acl=["mobile-team"]),
                _doc("D4", "Oncall handbook", "Page the secondary after fifteen minutes without an acknowledgement."),
            )
        ],
    )
    store.delete_missing("documents", "t1", {"D2", "D3", "D4"}, scope={})
    store.commit()
    changed = sync_index(store, "t1", settings)
    assert (changed.chunks, changed.added, changed.updated, changed.removed) == (3, 1, 2, 1)
    assert changed.embedded + changed.cache_hits == 2  # D2's new text and D4; D3 keeps its vector
    assert changed.generation != first.generation

    index = SemanticIndex.load(settings, "t1", embeddings=query_embeddings)
    assert sorted(r["doc_ref"] for r in index.rows) == ["D2", "D3", "D4"] and len(index.dense) == 3
    assert index.search_bm25("memcached redis", 5, []) == []  # the deleted document is gone
    assert "D1" not in _refs(index.search_dense("session cache in Redis", 5, []))
    assert _refs(index.search_bm25("stripe event id", 3, [])) == ["D2"]
    assert index.search_bm25("duplicate charges idempotency", 3, []) == []  # D2's old text is gone
    assert "D3" not in _refs(index.search_dense("Android release train", 5, []))
    assert _refs(index.search_dense("Android release train", 1, ["mobile-team"])) == ["D3"]


def test_persisted_bm25_scores_like_a_fresh_fit(tmp_path, embed_cache):
    settings = _settings(tmp_path, embed_cache)
    ingest(settings, {"t1": {"documents": DOCS}})
    index = SemanticIndex.load(settings, "t1")
    chunks = _chunks(settings)
    fresh = BM25Index(idf="lucene").fit([c.id for c in chunks], [embedding_text(c) for c in chunks])
    assert index.bm25.ids == fresh.ids
    for query in ("redis session cache", "duplicate charges", "release Tuesday"):
        np.testing.assert_array_equal(index.bm25.scores(query), fresh.scores(query))


def test_a_bm25_file_of_an_older_tokenization_is_refit_and_rewritten(tmp_path, embed_cache, monkeypatch):
    """An index written by a release that tokenized otherwise (here: whitespace words, no stems, and
    no tag in the file, as before the tag existed) is refit from its chunks at load, so stemmed query
    tokens meet it; the next sync writes it anew without embedding anything."""
    settings = _settings(tmp_path, embed_cache)
    (report,) = ingest(settings, {"t1": {"documents": DOCS}})
    gen = index_dir(settings, "t1") / report.index.generation
    loaded = SemanticIndex.load(settings, "t1")
    with monkeypatch.context() as patch:
        patch.setattr(
            "context_engine.retrievers.bm25.tokenize", lambda text, drop_stopwords=False: text.lower().split()
        )
        old = BM25Index(idf="lucene").fit(loaded.bm25.ids, [embedding_text(c) for c in _chunks(settings)])
    old.save(gen / "bm25.npz")
    arrays = dict(np.load(gen / "bm25.npz", allow_pickle=False))
    del arrays["tokenization"]
    np.savez(gen / "bm25.npz", **arrays)
    assert BM25Index.load(gen / "bm25.npz", old.ids).tokenization == "light-stem"
    assert old.search("callback retries") == []  # stemmed query tokens miss the old vocabulary

    index = SemanticIndex.load(settings, "t1")
    assert index.bm25_refit and index.bm25.tokenization == TOKENIZATION
    assert _refs(index.search_bm25("callback retries", 1, [])) == ["D2"]
    fits = []
    fit = index_module._fit_bm25
    monkeypatch.setattr(index_module, "_fit_bm25", lambda rows: fits.append(len(rows)) or fit(rows))
    resynced = sync_index(open_store(settings), "t1", settings)
    assert resynced.generation != report.index.generation and resynced.embedded == 0
    assert len(fits) == 1  # the refit at load is the one written: the chunks did not change
    again = SemanticIndex.load(settings, "t1")
    assert not again.bm25_refit and _refs(again.search_bm25("retries", 1, [])) == ["D2"]


def _chunks(settings):
    records = open_store(settings).collection("documents").find({"tenant_id": "t1"})
    return chunk_collection("documents", records, tenant="t1")


def test_failed_sync_leaves_the_previous_index_usable(tmp_path, embed_cache, monkeypatch, query_embeddings):
    settings = _settings(tmp_path, embed_cache)
    (report,) = ingest(settings, {"t1": {"documents": DOCS}})
    store = open_store(settings)
    store.upsert(
        "documents", "t1", [normalize("documents", _doc("D5", "Flaky tests", "The checkout suite times out."))]
    )
    store.commit()

    def disk_full(*_args, **_kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(index_module.BM25Index, "save", disk_full)
    with pytest.raises(OSError, match="No space"):
        sync_index(store, "t1", settings)
    index = SemanticIndex.load(settings, "t1", embeddings=query_embeddings)
    assert index.generation == report.index.generation and len(index) == 3
    assert _refs(index.search_bm25("memcached redis", 1, [])) == ["D1"]
    assert _refs(index.search_dense("payment callbacks charged twice", 1, [])) == ["D2"]
    assert sorted(p.name for p in index_dir(settings, "t1").iterdir()) == ["CURRENT", report.index.generation]

    monkeypatch.undo()
    retried = sync_index(store, "t1", settings)
    assert (retried.added, retried.chunks) == (1, 4)
    assert _refs(SemanticIndex.load(settings, "t1").search_bm25("checkout suite", 1, [])) == ["D5"]


def test_an_unreadable_generation_is_rebuilt_by_the_next_sync(tmp_path, embed_cache):
    settings = _settings(tmp_path, embed_cache)
    (report,) = ingest(settings, {"t1": {"documents": DOCS}})
    (index_dir(settings, "t1") / report.index.generation / "chunks.json").write_text("{truncated")
    with pytest.raises(IndexDamaged, match="damaged"):
        SemanticIndex.load(settings, "t1")
    rebuilt = sync_index(open_store(settings), "t1", settings)
    assert (rebuilt.added, rebuilt.chunks, rebuilt.embedded) == (3, 3, 0)  # vectors from the cache
    assert _refs(SemanticIndex.load(settings, "t1").search_bm25("memcached", 1, [])) == ["D1"]


def test_missing_index_is_reported(tmp_path, embed_cache):
    settings = _settings(tmp_path, embed_cache)
    ingest(settings, {"t1": {"documents": DOCS}}, index=False)
    with pytest.raises(IndexMissing, match="t1"):
        SemanticIndex.load(settings, "t1")


# ------------------------------------------------------------------------------ isolation
def test_same_text_in_two_tenants_is_seen_only_by_its_own(tmp_path, embed_cache, query_embeddings):
    settings = _settings(tmp_path, embed_cache)
    text = "Quarterly access review of the production database is due Friday."
    ingest(
        settings,
        {
            "t1": {"documents": [_doc("T1-DOC", "Access review", text)]},
            "t2": {"documents": [_doc("T2-DOC", "Access review", text), DOCS[0]]},
        },
    )
    one = SemanticIndex.load(settings, "t1", embeddings=query_embeddings)
    two = SemanticIndex.load(settings, "t2", embeddings=query_embeddings)
    assert _refs(one.search_bm25("access review", 10, [])) == ["T1-DOC"]
    assert _refs(one.search_dense("access review", 10, [])) == ["T1-DOC"]
    assert _refs(two.search_bm25("access review", 10, [])) == ["T2-DOC"]
    assert sorted(_refs(two.search_dense("access review", 10, []))) == ["D1", "T2-DOC"]
    assert index_dir(settings, "t1") != index_dir(settings, "t2")
    # A tenant name is an identifier: anything that is not one is refused, so none can collide or
    # escape the index directory.
    for name in ("a/b", "..", "a b", "a.b"):
        with pytest.raises(TenantError):
            index_dir(settings, name)


@pytest.fixture(scope="module")
def sample_subset_index(tmp_path_factory, embed_cache, query_embeddings) -> SemanticIndex:
    """The acme sample's #security-private and #incidents channels, the Stripe-key and double-charge
    PRs, two documents (one Chinese) and a Chinese issue: 43 chunks."""
    acme = generate()["acme"]
    pr_titles = {STORIES["leaked_stripe_key"]["pr_title"], STORIES["payments_double_charge"]["pr_title"]}
    doc_titles = {STORIES["ci_self_hosted_runners"]["doc_title"], STORIES["redis_session_cache"]["doc_title"]}
    subset = {
        "messages": [m for m in acme["messages"] if m.get("channel") in ("security-private", "incidents")],
        "pull_requests": [p for p in acme["pull_requests"] if p["title"] in pr_titles],
        "documents": [d for d in acme["documents"] if d.get("title") in doc_titles],
        "issues": [i for i in acme["issues"] if i.get("key") == "OPS-142"],
    }
    settings = _settings(tmp_path_factory.mktemp("acme-subset"), embed_cache, tenant="acme")
    ingest(settings, {"acme": subset})
    return SemanticIndex.load(settings, "acme", embeddings=query_embeddings)


def test_private_channel_thread_only_reaches_members(sample_subset_index):
    index = sample_subset_index
    private = {r["doc_ref"] for r in index.rows if r["acl"] != ["*"]}
    assert private and all(ref.startswith("G04SECPR9Z:") for ref in private)  # the #security-private threads
    query = "Stripe secret key committed to a public gist"
    everything = len(index)
    for principals in ([], OUTSIDER):
        for search in (index.search_bm25, index.search_dense):
            refs = _refs(search(query, everything, principals))
            assert refs and not private & set(refs)
    leak_thread = f"G04SECPR9Z:{STORIES['leaked_stripe_key']['thread']['ts']}"
    # achen42 is in #security-private; the channel grants access by Slack id, not by login.
    [slack_id] = [p["slack_id"] for p in generate()["acme"]["people"] if p["login"] == "achen42"]
    MEMBER = [f"slack:{slack_id}"]
    assert _refs(index.search_bm25(query, 1, MEMBER)) == [leak_thread]
    assert _refs(index.search_dense(query, 1, MEMBER)) == [leak_thread]


def test_chinese_query_finds_chinese_chunks(sample_subset_index):
    chinese = {"DOC-36", "OPS-142"}
    for query in ("CI 自托管 runner 迁移", "把持续集成迁移到自己的服务器"):
        assert _refs(sample_subset_index.search_bm25(query, 1, []))[0] in chinese
        assert _refs(sample_subset_index.search_dense(query, 1, []))[0] in chinese


def test_hits_carry_the_shared_metadata_and_nothing_hidden(sample_subset_index):
    (hit,) = sample_subset_index.search_bm25("Rotate leaked Stripe key", 1, [])
    meta = hit.metadata
    assert hit.id == meta["chunk_id"] and meta["doc_ref"] == "acme/web#2093" and meta["collection"] == "pull_requests"
    assert meta["url"] == STORIES["leaked_stripe_key"]["pr_url"] and meta["author"] == "achen42"
    assert meta["date"].startswith("2026-10-20") and meta["retriever"] == "bm25" and meta["ranks"] == {"bm25": 1}
    assert not {"tenant_id", "acl", "_id"} & set(meta)


def test_bm25_answers_while_the_dense_part_is_still_embedding(tmp_path, monkeypatch):
    from context_engine.retrievers import embedding_cache

    settings = _settings(tmp_path, tmp_path / "empty-cache.sqlite")  # nothing embedded yet
    docs = [
        _doc(f"N{i}", f"Note {i}", f"Runbook note {i}: rotate the zebrafish credentials on day {i}.")
        for i in range(index_module.INTERIM_MIN + 8)
    ]
    seen_mid_embedding = []
    original = embedding_cache.CachedEmbeddings.encode_batches

    def watching(self, texts, on_progress=None):
        live = SemanticIndex.load(settings, "t1")  # what a reader gets while the embedding runs
        seen_mid_embedding.append(
            (live.pending, len(live), len(live.dense), _refs(live.search_bm25("zebrafish credentials day 7", 1, [])))
        )
        yield from original(self, texts, on_progress)

    monkeypatch.setattr(embedding_cache.CachedEmbeddings, "encode_batches", watching)
    fits = []
    fit = index_module._fit_bm25
    monkeypatch.setattr(index_module, "_fit_bm25", lambda rows: fits.append(len(rows)) or fit(rows))
    ingest(settings, {"t1": {"documents": docs}}, public=True)
    [(pending, chunks, vectors, top)] = seen_mid_embedding
    assert (pending, chunks, vectors, top) == (len(docs), len(docs), 0, ["N7"])
    done = SemanticIndex.load(settings, "t1")
    assert done.pending == 0 and len(done.dense) == len(docs)
    assert fits == [len(docs)]  # the interim generation's BM25 is the final one's: fitted once


def test_vectors_go_into_faiss_in_groups_each_under_its_own_chunk(tmp_path, embed_cache, query_embeddings, monkeypatch):
    """The sync hands FAISS the vectors a group of embedding batches at a time, as they come (never
    all of them held twice): cached and new vectors alike must land under the chunk they belong to."""
    from functools import partial

    from context_engine.retrievers.dense import DenseIndex

    docs = [
        _doc(f"G{i}", f"Group note {i}", f"Group note {i}: the {word} rota changes on day {i}.")
        for i, word in enumerate(["pager", "release", "billing", "oncall", "triage"] * 4)
    ]
    ingest(_settings(tmp_path / "first", embed_cache), {"t1": {"documents": docs[::2]}}, public=True)
    added: list[int] = []
    add = DenseIndex.add
    monkeypatch.setattr(DenseIndex, "add", lambda self, ids, vectors: added.append(len(ids)) or add(self, ids, vectors))
    monkeypatch.setattr(index_module, "CachedEmbeddings", partial(index_module.CachedEmbeddings, batch_size=2))
    monkeypatch.setattr(index_module, "FAISS_BATCH", 3)
    settings = _settings(tmp_path / "second", embed_cache)
    (report,) = ingest(settings, {"t1": {"documents": docs}}, public=True)  # half of the vectors cached
    assert (report.index.cache_hits, report.index.embedded) == (len(docs) // 2, len(docs) // 2)
    assert added == [4] * (len(docs) // 4)  # two embedding batches of 2 per group of at least 3
    live = SemanticIndex.load(settings, "t1")
    assert len(live.dense) == len(live) == len(docs)
    texts = {r["id"]: index_module.row_embedding_text(r) for r in live.rows}
    expected = query_embeddings.encode_documents(list(texts.values()))
    for chunk_id, vector in zip(texts, expected):
        np.testing.assert_allclose(live.dense.vector(chunk_id), vector, atol=1e-5)


def test_cached_and_new_vectors_come_back_in_the_order_of_the_texts(tmp_path):
    from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache

    model = make_embeddings(Settings().embedding_model)
    texts = ["the payments retry storm", "Redis for sessions", "zebrafish credentials", "CI 迁移到自托管 runner"]
    cached = CachedEmbeddings(model, EmbeddingCache(tmp_path / "vectors.sqlite"), batch_size=2)
    first = cached.encode_documents(texts[1::2])  # half of them cached first
    assert (cached.hits, cached.misses) == (0, 2)
    mixed = cached.encode_documents(texts)
    assert (cached.hits, cached.misses) == (2, 4)
    np.testing.assert_array_equal(mixed[1::2], first)
    np.testing.assert_allclose(mixed, model.encode_documents(texts), atol=1e-6)
    assert cached.encode_documents([]).shape == (0, mixed.shape[1])


def test_syncing_reads_the_stored_records_without_changing_them(tmp_path, embed_cache):
    """Chunking reads the embedded store's own documents (not copies): they must come out as they went
    in, and give the chunks that copies of them give."""
    import copy

    settings = _settings(tmp_path, embed_cache, tenant="acme")
    acme = generate()["acme"]
    subset = {name: acme[name][:40] for name in ("messages", "pull_requests", "issues", "documents", "commits")}
    ingest(settings, {"acme": subset}, index=False)
    store = open_store(settings)
    before = {name: copy.deepcopy(list(store.tenant_records(name, "acme"))) for name in subset}
    report = sync_index(store, "acme", settings)
    assert report.chunks > 40
    for name, records in before.items():
        assert list(store.tenant_records(name, "acme")) == records
        copies = list(store.collection(name).find({"tenant_id": "acme"}))
        assert chunk_collection(name, copies, tenant="acme") == chunk_collection(name, records, tenant="acme")
    assert list(store.tenant_records("messages", "globex")) == []

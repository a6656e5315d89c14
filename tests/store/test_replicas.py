"""Past one machine: with MONGODB_URI, MongoDB is the source of truth for records, vectors and each
tenant's index revision, and every replica's BM25/FAISS is a cache it rebuilds by revision. Simulated
here as two engine instances (two data dirs: their local caches) sharing one in-process MongoDB
(`mongomock://`, the same pymongo code path as a real server)."""

import time
import uuid

import pytest

from context_engine import graph
from context_engine.config import Settings
from context_engine.ingest import ingest, sync_tenant_index
from context_engine.resources import forget
from context_engine.retrievers import embedding_cache
from context_engine.store.documents import SHARED_POLL_SECONDS, open_store

DOCS = [
    {"doc_id": "R1", "title": "Session cache", "body": "We moved the session cache from Memcached to Redis."},
    {"doc_id": "R2", "title": "Payments retries", "body": "Payment callbacks are retried with exponential backoff."},
]
NEW = {"doc_id": "R3", "title": "Quarkwell migration", "body": "The quarkwell broker replaces the old queue in March."}


@pytest.fixture
def replicas(tmp_path, monkeypatch):
    monkeypatch.setenv("MONGODB_URI", f"mongomock://replicas-{uuid.uuid4().hex}")
    monkeypatch.setenv("CONTEXT_ENGINE_USE_LLM", "0")
    monkeypatch.setenv(
        "CONTEXT_ENGINE_EMBED_CACHE", str(tmp_path / "embeddings.sqlite")
    )  # a cold cache: counts are exact
    a, b = (Settings(data_dir=tmp_path / name, tenant="t1") for name in ("replica-a", "replica-b"))
    yield a, b
    forget(a), forget(b)


def _ask(settings, question):
    return graph.invoke({"question": question}, context={"data_dir": str(settings.data_dir), "tenant": "t1"})


def _embedded(monkeypatch) -> list[int]:
    """How many texts each index sync embedded (cache misses), in order."""
    misses: list[int] = []
    real = embedding_cache.CachedEmbeddings.encode_batches

    def counting(self, texts, on_progress=None):
        yield from real(self, texts, on_progress)
        misses.append(self.misses)

    monkeypatch.setattr(embedding_cache.CachedEmbeddings, "encode_batches", counting)
    return misses


def test_a_write_through_one_replica_is_answered_by_the_other(replicas, monkeypatch):
    a, b = replicas
    ingest(a, {"t1": {"documents": DOCS}}, public=True)  # replica A: records, vectors, revision 1
    shared = open_store(a)
    assert shared.engine_collection("index_revisions").find_one({"_id": "t1"})["revision"] == 1
    assert shared.engine_collection("index_vectors").count_documents({}) >= len(DOCS)

    misses = _embedded(monkeypatch)
    first = _ask(b, "why did we move the session cache to Redis?")  # replica B builds its cache
    assert "R1" in {c["id"] for c in first["citations"]}
    assert sum(misses) == 0  # B embedded nothing: the vectors came from MongoDB

    # A webhook through replica A: records committed at once, its index synced in the background.
    ingest(a, {"t1": {"documents": [NEW]}}, public=True, index=False)
    sync_tenant_index(a, "t1")
    assert shared.engine_collection("index_revisions").find_one({"_id": "t1"})["revision"] == 2
    time.sleep(SHARED_POLL_SECONDS)  # B asks MongoDB at most once a second
    answer = _ask(b, "what replaces the old queue with the quarkwell broker?")
    assert "R3" in {c["id"] for c in answer["citations"]}, answer["answer"]
    assert sum(misses) == 1  # only A embedded the new text, once
    # Both replicas now hold the same chunks, and answer the same.
    again = _ask(a, "what replaces the old queue with the quarkwell broker?")
    assert [c["id"] for c in again["citations"]] == [c["id"] for c in answer["citations"]]


def test_structured_answers_see_other_replicas_writes_at_once(replicas):
    a, b = replicas
    ingest(a, {"t1": {"documents": DOCS}}, public=True)
    before = _ask(b, "how many documents are there?")["records"][0]["count"]
    ingest(a, {"t1": {"documents": [NEW]}}, public=True, index=False)
    time.sleep(SHARED_POLL_SECONDS)
    assert _ask(b, "how many documents are there?")["records"][0]["count"] == before + 1

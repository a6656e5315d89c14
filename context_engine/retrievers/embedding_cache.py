"""A persistent cache of document embeddings, so re-indexing embeds only texts it has never seen.

Embedding is the slow step of indexing (multilingual-e5-small embeds about two SciFact abstracts a
second on two cores), and re-syncing an unchanged source must cost near zero re-embedding. Vectors
are stored in SQLite (one file in the data directory, safe against a crash half-way: each batch is a
transaction) under (the embedder's `cache_key()`, SHA-1 of the text): the key names the model, the
version of its weights (for the default model, the built graph itself, whose smoothing comes from its
calibration texts) and the normalisation, so a vector is only ever served to the model that computed
it. Queries are not cached: they are embedded once.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from context_engine.retrievers.dense import DenseEmbeddings

__all__ = ["CachedEmbeddings", "EmbeddingCache", "SharedEmbeddingCache"]


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class EmbeddingCache:
    """(model key, text) -> float32 vector, in one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, "
            "vec BLOB NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID"
        )

    def get(self, model: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """Positions of `texts` that are cached, with their vectors."""
        keys = [_key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                    [model, *part],
                ).fetchall()
                found.update((bytes(k), np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(model, _key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    def count(self, model: str) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", [model]).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class SharedEmbeddingCache:
    """(model, text) -> float32 vector in a MongoDB collection (`index_vectors`): with MONGODB_URI the
    vectors live beside the records, so a text embedded by one replica is never embedded by another."""

    def __init__(self, collection: Any, local: EmbeddingCache | None = None):
        self.collection = collection
        self.local = local  # read through: vectors this machine embedded before are shared, not recomputed

    @staticmethod
    def _id(model: str, text: str) -> str:
        return f"{model}:{_key(text).hex()}"

    def get(self, model: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        ids = [self._id(model, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            for doc in self.collection.find({"_id": {"$in": ids[start : start + 500]}}):
                found[doc["_id"]] = np.frombuffer(bytes(doc["vec"]), dtype=np.float32)
        hits = {i: found[k] for i, k in enumerate(ids) if k in found}
        missing = [i for i in range(len(texts)) if i not in hits]
        if self.local is not None and missing:
            local = self.local.get(model, [texts[i] for i in missing])
            if local:
                positions = [missing[j] for j in local]
                self.put(model, [texts[i] for i in positions], np.stack([local[j] for j in local]))
                hits.update((missing[j], vector) for j, vector in local.items())
        return hits

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors):
            doc_id = self._id(model, text)
            self.collection.replace_one(
                {"_id": doc_id},
                {"_id": doc_id, "model": model, "vec": np.asarray(vector, dtype=np.float32).tobytes()},
                upsert=True,
            )

    def count(self, model: str) -> int:
        return self.collection.count_documents({"model": model})

    def close(self) -> None:
        """The collection belongs to the store's client; the local cache is closed."""
        if self.local is not None:
            self.local.close()


class CachedEmbeddings(Embeddings):
    """Document embeddings read from `cache` when present, computed (and stored) otherwise.

    `on_progress(done, total)` is called after each embedded batch, for progress bars.
    """

    def __init__(self, embeddings: DenseEmbeddings, cache: EmbeddingCache, *, batch_size: int = 64):
        self.embeddings = embeddings
        self.cache = cache
        self.batch_size = batch_size
        self.name = embeddings.name
        self._key: str | None = None
        self.hits = 0
        self.misses = 0

    @property
    def key(self) -> str:
        """The embedder's cache key, asked once and only when there is something to look up: for the
        default model it loads the graph."""
        if self._key is None:
            self._key = self.embeddings.cache_key()
        return self._key

    @property
    def dim(self) -> int | None:
        return self.embeddings.dim

    def encode_batches(self, texts: Sequence[str], on_progress=None) -> Iterator[tuple[list[int], np.ndarray]]:
        """The vectors of `texts` a batch at a time, as (positions in `texts`, their vectors): the cached
        ones first, then the ones computed. A caller that hands each batch on (the FAISS build) never
        holds every vector twice (~0.7 GB at 444k chunks). `texts` is read by position, twice at most:
        once for the cache lookup, once for a text that has to be embedded (the sync's texts are made
        when read)."""
        cached = self.cache.get(self.key, texts) if len(texts) else {}
        missing = [i for i in range(len(texts)) if i not in cached]
        self.hits += len(cached)
        self.misses += len(missing)
        hits = sorted(cached)
        for start in range(0, len(hits), self.batch_size):
            part = hits[start : start + self.batch_size]
            yield part, np.stack([cached.pop(i) for i in part])
        for start in range(0, len(missing), self.batch_size):
            part = missing[start : start + self.batch_size]
            batch = [texts[i] for i in part]
            vectors = self.embeddings.encode_documents(batch)
            self.cache.put(self.key, batch, vectors)
            yield part, vectors
            if on_progress:
                on_progress(min(start + self.batch_size, len(missing)), len(missing))

    def encode_documents(self, texts: Sequence[str], on_progress=None) -> np.ndarray:
        texts = list(texts)
        out: np.ndarray | None = None
        for part, vectors in self.encode_batches(texts, on_progress):
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
        if out is None:  # no texts
            return np.zeros((0, self.embeddings.dim or 0), dtype=np.float32)
        self.embeddings.dim = int(out.shape[1])
        return out

    def encode_query(self, text: str) -> np.ndarray:
        return self.embeddings.encode_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode_query(text).tolist()

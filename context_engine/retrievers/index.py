"""The persisted semantic index of one tenant: chunks, BM25 and dense vectors, synced from the store.

Layout, one directory per tenant (so one tenant's search can never reach another's chunks):

    <data_dir>/index/<tenant>/CURRENT          name of the live generation
    <data_dir>/index/<tenant>/gen-000007/
        manifest.json   tenant, embedding model, chunk count, fingerprint of the chunks, timings
        chunks.json     one row per chunk: id, doc_ref, collection, text, title, url, author,
                        date, acl, position, embed_hash
        bm25.npz        the BM25 weight matrix (CSC arrays), idf and vocabulary: loading is a
                        few array reads, no tokenizing
        dense/          `DenseIndex` (FAISS + id map)

A sync writes a complete new generation beside the live one and then switches `CURRENT`
atomically (as the embedded document store does), so a failure half-way leaves the previous
index in use. Only new or changed chunk texts are embedded, through the SQLite embedding cache,
so re-syncing an unchanged store embeds nothing (and writes nothing).

Access control: a chunk is returned only when its ACL holds "*" or one of the asker's
principals. BM25 applies this as a boolean mask over the score vector (free: the scores of every
chunk are computed anyway); dense search over-fetches from FAISS and filters by the same mask
(`DenseIndex.search(allowed=...)`, the fetch grows until k visible hits are found);
`eval/hybrid_bench.py` measures both.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document

from context_engine.access import PUBLIC
from context_engine.config import Settings, check_tenant
from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.chunking import Chunk, chunk_collection, embedding_text, text_collections, titled_text
from context_engine.retrievers.dense import DenseEmbeddings, DenseIndex, make_embeddings
from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache, SharedEmbeddingCache
from context_engine.store.builds import publish_build
from context_engine.store.regular_files import NotRegularFile, open_regular, read_regular_text
from context_engine.text import TOKENIZATION

__all__ = [
    "INDEX_DIR",
    "IndexMissing",
    "SemanticIndex",
    "SyncReport",
    "fit_bm25",
    "index_dir",
    "index_lag",
    "row_embedding_text",
    "sync_chunks",
    "sync_index",
]

INDEX_DIR = "index"
PROGRESS_FILE = "embedding-progress.json"
INTERIM_MIN = 32  # chunks to embed from which a BM25-first generation goes live before the embedding
FAISS_BATCH = 16_384  # vectors per FAISS add while syncing (25 MB at 384 dimensions)
_FORMAT = 1

#: progress(label, count): e.g. ("acme: chunks to embed", 120) then ("acme: embedded", 64), ...
Progress = Callable[[str, int], None]


class IndexDamaged(RuntimeError):
    """The live generation cannot be read (truncated, altered or foreign files); one line for the user."""


class IndexMissing(FileNotFoundError):
    """The tenant has no semantic index yet (nothing ingested, or ingested with index=False)."""


def index_dir(settings: Settings, tenant: str) -> Path:
    """`<data_dir>/index/<tenant>`: a tenant name is an identifier (`config.check_tenant`), used as-is."""
    return settings.data_dir / INDEX_DIR / check_tenant(tenant)


@dataclass
class SyncReport:
    tenant: str
    chunks: int = 0  # chunks in the index after the sync
    added: int = 0
    updated: int = 0  # same id, different text or metadata
    removed: int = 0
    embedded: int = 0  # texts run through the embedding model
    cache_hits: int = 0  # texts whose vectors came from the embedding cache
    seconds: float = 0.0
    generation: str | None = None  # the live generation after the sync

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        return out


# ------------------------------------------------------------------------------ chunk rows
def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _row(chunk: Chunk) -> dict[str, Any]:
    # The text the model embeds is not kept in the row but derived again from title and text when needed
    # (`row_embedding_text`): a second copy of every chunk's text weighed on the ingest's peak memory.
    return {
        "id": chunk.id,
        "doc_ref": chunk.doc_ref,
        "collection": chunk.collection,
        "text": chunk.text,
        "title": chunk.title,
        "url": chunk.url,
        "author": chunk.author,
        "date": _iso(chunk.date),
        "acl": sorted(set(chunk.acl)),
        "position": chunk.position,
        "embed_hash": hashlib.sha1(embedding_text(chunk).encode("utf-8")).hexdigest(),
    }


def row_embedding_text(row: dict[str, Any]) -> str:
    """What the dense model embeds for a chunk row of `chunks.json` (and BM25 indexes): `embedding_text`
    of its chunk."""
    return titled_text(row.get("title"), row["text"])


class _EmbeddingTexts(Sequence):
    """`row_embedding_text` of each row, made when read: a list of them would be another copy of every
    chunk's text (~0.2 GB at 444k chunks) for as long as the embedding runs."""

    def __init__(self, rows: Sequence[dict[str, Any]]):
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, position: int) -> str:  # positions only: no caller slices
        return row_embedding_text(self._rows[position])


def _fingerprint(rows: Sequence[dict[str, Any]]) -> str:
    """A digest of every chunk row: equal fingerprints mean the index was built from equal content."""
    digest = hashlib.sha1()
    for row in sorted(rows, key=lambda r: r["id"]):
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


# ------------------------------------------------------------------------------ generations
def live_generation(settings: Settings, tenant: str) -> str | None:
    """The name of the tenant's live generation on disk (a reader compares it with what it holds)."""
    gen = _current(index_dir(settings, tenant))
    return gen.name if gen else None


def index_status(settings: Settings, tenant: str) -> dict[str, Any] | None:
    """What the tenant's live generation holds (its manifest), without loading it; None if absent."""
    gen = _current(index_dir(settings, tenant))
    if gen is None:
        return None
    try:
        with open_regular(gen / "manifest.json") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return {"generation": gen.name, "damaged": True}
    status = {
        k: manifest.get(k)
        for k in ("generation", "chunks", "pending", "model", "built_at", "store_generation", "store_seq")
    }
    try:
        with open_regular(index_dir(settings, tenant) / PROGRESS_FILE) as fh:
            done = json.load(fh)
        rate = done["done"] / max(done["at"] - done["started"], 1e-6)
        status["embedding"] = {
            "done": done["done"],
            "total": done["total"],
            "per_second": round(rate, 1),
            "eta_seconds": round((done["total"] - done["done"]) / rate) if rate else None,
        }
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no embedding running (or it has not finished a batch yet)
    return status


def _current(root: Path) -> Path | None:
    pointer = root / "CURRENT"
    if not pointer.exists():
        return None
    try:
        gen = root / read_regular_text(pointer).strip()
    except NotRegularFile:
        return None  # damaged: as if absent (rebuilt by the next ingest)
    return gen if gen.is_dir() else None


def _write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())


def _write_generation(
    root: Path, rows: list[dict[str, Any]], bm25: BM25Index, dense: DenseIndex, manifest: dict[str, Any]
) -> str:
    """Write a complete generation, then switch CURRENT to it; returns its name."""
    current = _current(root)
    number = int(current.name.split("-")[1]) + 1 if current else 1
    name = f"gen-{number:06d}"

    def write(tmp: Path) -> None:
        _write_json(tmp / "chunks.json", rows)
        bm25.save(tmp / "bm25.npz")
        dense.save(tmp / "dense")
        _write_json(tmp / "manifest.json", {**manifest, "generation": name})

    publish_build(root, name, write)
    return name


# ------------------------------------------------------------------------------ the index
class SemanticIndex:
    """One tenant's chunks with their BM25 and dense indexes; read-only once loaded."""

    def __init__(
        self,
        tenant: str,
        rows: list[dict[str, Any]],
        bm25: BM25Index,
        dense: DenseIndex,
        manifest: dict[str, Any],
        embeddings: DenseEmbeddings | None = None,
    ):
        self.tenant = tenant
        self.rows = rows
        self.bm25 = bm25
        self.dense = dense
        self.manifest = manifest
        self.model = manifest["model"]
        self._embeddings = embeddings
        self._row_of = {row["id"]: i for i, row in enumerate(rows)}
        self.bm25_refit = False  # BM25 refit at load from an older tokenization (see _load_generation)
        self._public = np.fromiter((PUBLIC in row["acl"] for row in rows), dtype=bool, count=len(rows))
        members: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            for principal in row["acl"]:
                if principal != PUBLIC:
                    members.setdefault(principal, []).append(i)
        self._members = {p: np.asarray(r, dtype=np.int64) for p, r in members.items()}

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def generation(self) -> str:
        return self.manifest["generation"]

    @property
    def pending(self) -> int:
        """Chunks still being embedded: found by BM25, not yet by dense search."""
        return int(self.manifest.get("pending", 0))

    @classmethod
    def load(cls, settings: Settings, tenant: str, embeddings: DenseEmbeddings | None = None) -> SemanticIndex:
        """The tenant's live generation. `embeddings` embeds queries and must be the model the index
        was built with; by default that model is made here and loaded on the first dense search."""
        root = index_dir(settings, tenant)
        for _attempt in range(3):  # a concurrent sync may delete the generation between two reads
            gen = _current(root)
            if gen is None:
                raise IndexMissing(
                    f"no semantic index for tenant {tenant!r} in {settings.data_dir}: run `context-engine ingest` first"
                )
            try:
                return cls._load_generation(gen, tenant, embeddings)
            except FileNotFoundError:
                continue
            except IndexDamaged:
                raise
            except Exception as exc:  # noqa: BLE001 - numpy, zipfile, json and faiss each fail their own way
                # on a truncated or altered file; whatever the way, the generation cannot be used
                raise IndexDamaged(
                    f"the semantic index of tenant {tenant!r} is damaged ({gen.name}: "
                    f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}): "
                    "re-run `context-engine ingest` to rebuild it"
                ) from None
        raise IndexMissing(f"the semantic index of tenant {tenant!r} kept changing while being read")

    @classmethod
    def _load_generation(cls, gen: Path, tenant: str, embeddings: DenseEmbeddings | None) -> SemanticIndex:
        with open_regular(gen / "manifest.json") as fh:
            manifest = json.load(fh)
        if manifest.get("format") != _FORMAT or manifest.get("tenant") != tenant:
            raise ValueError(f"{gen}: not a format-{_FORMAT} index of tenant {tenant!r}")
        if embeddings is not None and embeddings.name != manifest["model"]:
            raise IndexDamaged(
                f"the index of tenant {tenant!r} was built with embedding model {manifest['model']!r}, "
                f"not {embeddings.name!r}: re-run `context-engine ingest` to rebuild it"
            )
        with open_regular(gen / "chunks.json") as fh:
            rows = json.load(fh)
        bm25 = BM25Index.load(gen / "bm25.npz", [row["id"] for row in rows])
        refit = bm25.tokenization != TOKENIZATION
        if refit:  # written by a release that tokenized otherwise: searchable now, rewritten by the next sync
            bm25 = _fit_bm25(rows)
        index = cls(tenant, rows, bm25, DenseIndex.load(gen / "dense"), manifest, embeddings)
        index.bm25_refit = refit
        return index

    # -------------------------------------------------------------------------- access
    def visible(self, principals: Iterable[str]) -> np.ndarray:
        """Boolean mask over the chunks: public ones and those whose ACL names one of `principals`."""
        mask = self._public.copy()
        for principal in principals:
            rows = self._members.get(principal)
            if rows is not None:
                mask[rows] = True
        return mask

    def _document(self, row: int, score: float, retriever: str, rank: int) -> Document:
        r = self.rows[row]
        return Document(
            page_content=r["text"],
            id=r["id"],
            metadata={
                "chunk_id": r["id"],
                "doc_ref": r["doc_ref"],
                "collection": r["collection"],
                "title": r["title"],
                "url": r["url"],
                "author": r["author"],
                "date": r["date"],
                "position": r["position"],
                "score": float(score),
                "retriever": retriever,
                "ranks": {retriever: rank},
            },
        )

    # -------------------------------------------------------------------------- search
    def search_bm25(self, query: str, k: int, principals: Iterable[str]) -> list[Document]:
        """Up to k visible chunks containing a query term, best BM25 score first (ties: index order)."""
        if k <= 0 or not self.rows:
            return []
        scores = self.bm25.scores(query)
        # Lucene idf is positive, so a positive score means "contains a query term".
        hits = np.flatnonzero(self.visible(principals) & (scores > 0))
        if len(hits) > k:
            kth = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth]  # keep every chunk tied with the k-th
        order = np.lexsort((hits, -scores[hits]))[:k]
        return [self._document(int(row), scores[row], "bm25", rank) for rank, row in enumerate(hits[order], start=1)]

    def query_embeddings(self) -> DenseEmbeddings:
        if self._embeddings is None:
            self._embeddings = make_embeddings(self.model)
        return self._embeddings

    def search_dense(self, query: str, k: int, principals: Iterable[str]) -> list[Document]:
        """The k visible chunks nearest to the query embedding, best cosine first."""
        if k <= 0 or not self.rows:
            return []
        mask = self.visible(principals)
        row_of = self._row_of
        allowed = None if mask.all() else (lambda chunk_id: bool(mask[row_of[chunk_id]]))
        hits = self.dense.search(self.query_embeddings().encode_query(query), k, allowed=allowed)
        return [
            self._document(row_of[chunk_id], score, "dense", rank)
            for rank, (chunk_id, score) in enumerate(hits, start=1)
        ]


# ------------------------------------------------------------------------------ sync
def sync_chunks(
    settings: Settings,
    tenant: str,
    chunks: Iterable[Chunk],
    progress: Progress | None = None,
    store_generation: int = 0,
    cache: Any = None,
    store_seq: int | None = None,
) -> SyncReport:
    """Make the tenant's persisted index hold exactly `chunks` (all of the tenant's chunks).

    Chunks are matched to the live generation by id: new ones are added, vanished ones deleted, and
    changed ones (any field) replaced; only texts that are new to the dense index are embedded,
    through the embedding cache at `settings.embedding_cache_path`. When nothing changed, nothing
    is written. A different `settings.embedding_model` than the live index's re-embeds everything.
    `store_generation` (the store commit the chunks were read at) and `store_seq` (the embedded
    store's last row number then) are recorded in the manifest, also when nothing else changed, so
    `index_lag` counts only what was written after; `cache` is where vectors are looked up and kept
    (default: the per-user SQLite cache).
    """
    started = time.perf_counter()
    report = SyncReport(tenant)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.tenant_id != tenant:
            raise ValueError(f"chunk {chunk.id!r} belongs to tenant {chunk.tenant_id!r}, not {tenant!r}")
        if chunk.id in seen:
            raise ValueError(f"duplicate chunk id {chunk.id!r}")
        seen.add(chunk.id)
        rows.append(_row(chunk))
    if progress:
        progress(f"{tenant}: chunks", len(rows))
    root = index_dir(settings, tenant)
    live = _current(root)
    try:
        previous = SemanticIndex._load_generation(live, tenant, None) if live else None
    except Exception:  # noqa: BLE001 - damaged (any way) or an older format: rebuilt from scratch, which
        previous = None  # the embedding cache keeps cheap
    embeddings = make_embeddings(settings.embedding_model)  # loads nothing until a text needs embedding
    model = embeddings.name
    reuse = previous is not None and previous.model == model
    old = {r["id"]: r for r in previous.rows} if previous else {}
    dense = previous.dense if reuse else DenseIndex(info={"model": model})

    new_ids = {r["id"] for r in rows}
    removed = [chunk_id for chunk_id in old if chunk_id not in new_ids]
    report.removed = len(removed)
    for row in rows:
        before = old.get(row["id"])
        if before is None:
            report.added += 1
        elif any(before.get(key) != value for key, value in row.items()):
            report.updated += 1
    report.chunks = len(rows)
    to_embed = [r for r in rows if r["id"] not in dense or old[r["id"]]["embed_hash"] != r["embed_hash"]]
    stamp = {"store_generation": store_generation, "store_seq": store_seq}
    if previous is not None and not report.changed and not to_embed and not previous.bm25_refit:
        if any(previous.manifest.get(key) != value for key, value in stamp.items()):
            _restamp(live, {**previous.manifest, **stamp})  # same chunks, read at a later store commit
        report.generation = previous.generation
        report.seconds = time.perf_counter() - started
        return report

    dense.delete(removed + [r["id"] for r in to_embed if r["id"] in dense])
    # BM25 is fitted at most once a sync: the interim generation and the final one hold the same rows,
    # and rows equal to the live generation's, in its order, keep its BM25 (refit at load if it was
    # written by an older tokenization).
    same_rows = (
        previous is not None and not report.changed and [r["id"] for r in previous.rows] == [r["id"] for r in rows]
    )
    bm25 = previous.bm25 if same_rows else _fit_bm25(rows)
    if len(to_embed) >= INTERIM_MIN:
        # Answers before embedding ends: a generation with every chunk in BM25 and the dense part it
        # already has goes live first; the embedded one replaces it. A killed embedding loses nothing:
        # each embedded batch is in the embedding cache.
        _write_generation(
            root,
            rows,
            bm25,
            dense,
            {**_manifest(tenant, model, dense, rows, report), "pending": len(to_embed), **stamp},
        )
    if to_embed:
        if progress:
            progress(f"{tenant}: chunks to embed", len(to_embed))
        own_cache = cache is None
        cache = EmbeddingCache(settings.embedding_cache_path) if own_cache else cache
        began = time.time()
        root.mkdir(parents=True, exist_ok=True)

        def on_batch(done: int, total: int) -> None:
            # For `status`: how far the embedding is, from which it estimates the time left.
            _write_json(root / PROGRESS_FILE, {"done": done, "total": total, "started": began, "at": time.time()})
            if progress:
                progress(f"{tenant}: embedded", done)

        try:
            embedder = CachedEmbeddings(embeddings, cache)
            # Vectors go into FAISS as they come, FAISS_BATCH at a time: FAISS keeps its own copy of
            # every vector, so gathering them all first would hold two (~0.7 GB at 444k chunks), and
            # HNSW builds slower when fed one small embedding batch at a time.
            batches = embedder.encode_batches(_EmbeddingTexts(to_embed), on_batch)
            for part, vectors in _in_groups(batches, FAISS_BATCH):
                dense.add([to_embed[i]["id"] for i in part], vectors)
        finally:
            if own_cache:
                cache.close()
            (root / PROGRESS_FILE).unlink(missing_ok=True)
        report.embedded, report.cache_hits = embedder.misses, embedder.hits
    report.generation = _write_generation(
        root, rows, bm25, dense, {**_manifest(tenant, model, dense, rows, report), **stamp}
    )
    report.seconds = time.perf_counter() - started
    return report


def _restamp(gen: Path, manifest: dict[str, Any]) -> None:
    """Replace a generation's manifest whole (written beside it, then renamed over it): a reader sees
    the old manifest or the new one, never half of one."""
    tmp = gen / f".manifest.json.tmp-{uuid.uuid4().hex}"
    _write_json(tmp, manifest)
    os.replace(tmp, gen / "manifest.json")


def index_lag(settings: Settings, tenant: str, store: Any) -> dict[str, Any] | None:
    """How far the tenant's live index is behind the store: the text records written since it was
    built (`written_since`) and, of those, the ones whose access list differs from the one the index
    holds for them (`access_changed`: until the next sync, searches find them by the old list and
    `hybrid.LiveAccess` drops what the store no longer allows). None when there is no index or the
    store cannot say (MongoDB numbers no rows; an index built before row numbers were recorded)."""
    gen = _current(index_dir(settings, tenant))
    file = getattr(store, "file", None)
    if gen is None or file is None:
        return None
    try:
        with open_regular(gen / "manifest.json") as fh:
            seq = json.load(fh).get("store_seq")
    except (OSError, ValueError):
        return None
    if not isinstance(seq, int):
        return None
    written = file.written_since(seq, tenant, text_collections(store.kinds(tenant)))
    changed = 0
    if written:
        with open_regular(gen / "chunks.json") as fh:
            indexed = {(row["collection"], row["doc_ref"]): set(row["acl"]) for row in json.load(fh)}
        for collection, record in written:
            # A Slack message is indexed with its thread, under the thread's ref.
            ref = (
                f"{record.get('channel_id')}:{record.get('thread_ts') or record.get('ts')}"
                if collection == "messages"
                else str(record.get("ref"))
            )
            held = indexed.get((collection, ref))
            changed += held is not None and held != set(record.get("acl") or [])
    return {"written_since": len(written), "access_changed": changed}


def live_fingerprint(settings: Settings, tenant: str) -> str | None:
    """The fingerprint of the chunks the tenant's live generation holds (None: no index)."""
    gen = _current(index_dir(settings, tenant))
    if gen is None:
        return None
    try:
        with open_regular(gen / "manifest.json") as fh:
            return json.load(fh).get("fingerprint")
    except (OSError, ValueError):
        return None


def fit_bm25(ids: Sequence[str], texts: Iterable[str]) -> BM25Index:
    """The engine's BM25 over chunks, whose texts are `embedding_text`s (the record's title, then the
    chunk). Lucene idf (never negative) rather than Okapi's: a tenant's index may hold only a few
    chunks, where Okapi gives a term found in half of them zero or negative weight."""
    return BM25Index(idf="lucene").fit(ids, texts)


def _in_groups(batches: Iterable[tuple[list[int], np.ndarray]], size: int) -> Iterator[tuple[list[int], np.ndarray]]:
    """Consecutive (positions, vectors) batches joined into groups of at least `size` rows (the last
    group may hold fewer)."""
    positions: list[int] = []
    parts: list[np.ndarray] = []
    for part, vectors in batches:
        positions += part
        parts.append(vectors)
        if len(positions) >= size:
            yield positions, np.concatenate(parts)
            positions, parts = [], []
    if positions:
        yield positions, np.concatenate(parts)


def _fit_bm25(rows: list[dict[str, Any]]) -> BM25Index:
    return fit_bm25([r["id"] for r in rows], (row_embedding_text(r) for r in rows))


def _manifest(tenant: str, model: str, dense: DenseIndex, rows: list[dict[str, Any]], report: SyncReport) -> dict:
    return {
        "format": _FORMAT,
        "tenant": tenant,
        "model": model,
        "dim": dense.dim,
        "chunks": len(rows),
        "pending": 0,
        "fingerprint": _fingerprint(rows),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sync": {k: v for k, v in report.to_json().items() if k not in ("tenant", "generation", "seconds")},
    }


def sync_index(store: Any, tenant: str, settings: Settings, progress: Progress | None = None) -> SyncReport:
    """Chunk every text collection of `tenant` in `store` (each searchable kind the tenant has, Slack
    messages as threads) and sync the tenant's index to exactly those chunks (see `sync_chunks`).

    On MongoDB the store is the source of truth for several replicas: vectors are read from and kept
    in its `index_vectors` collection, and the tenant's `index_revisions` document (revision and the
    chunks' fingerprint) is bumped when the chunks differ from what it names; each replica's local
    BM25/FAISS generation is a cache it rebuilds when its fingerprint falls behind (`follow_shared_index`)."""
    # A stream: each collection's chunks are let go once they are rows, before BM25 and the embedding.
    kinds = [kind for kind in store.kinds(tenant) if kind.searchable]
    chunks = (
        chunk
        for kind in kinds
        for chunk in chunk_collection(kind.name, store.tenant_records(kind.name, tenant), tenant=tenant, kind=kind)
    )
    vectors = store.engine_collection("index_vectors")
    shared = (
        SharedEmbeddingCache(vectors, EmbeddingCache(settings.embedding_cache_path)) if vectors is not None else None
    )
    try:
        file = getattr(store, "file", None)
        report = sync_chunks(
            settings,
            tenant,
            chunks,
            progress,
            store_generation=getattr(store, "generation", 0),
            cache=shared,
            store_seq=file.last_seq() if file is not None else None,
        )
    finally:
        if shared is not None:
            shared.close()
    revisions = store.engine_collection("index_revisions")
    fingerprint = live_fingerprint(settings, tenant)
    if revisions is not None and fingerprint is not None:
        shared = revisions.find_one({"_id": tenant}) or {}
        if shared.get("fingerprint") != fingerprint:
            revisions.update_one(
                {"_id": tenant},
                {
                    "$inc": {"revision": 1},
                    "$set": {
                        "fingerprint": fingerprint,
                        "model": settings.embedding_model,
                        "store_generation": getattr(store, "generation", 0),
                    },
                },
                upsert=True,
            )
    return report

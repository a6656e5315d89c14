"""The document store: MongoDB through pymongo, or an embedded store with the same API.

Both are used through the pymongo `Collection` API, so every query path is the same code. The
embedded store is mongomock (an in-process implementation of that API: the query engine) over
`<data-dir>/store.sqlite` (`sqlite_file.py`): a commit writes only the records that changed, in one
transaction, so a crash half-way leaves the previous data usable, and bumps the store generation,
by which other processes (a server) see that they must reload and derived state (catalogs) knows
what it was built from. Nothing is pickled: a data dir is data, never code.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_engine.config import HIDDEN_FIELDS, Settings, check_tenant
from context_engine.kinds import BUILTIN_NAMES, RESERVED, CollectionSpec, Registry, SpecError, check_name
from context_engine.store.embedded_stages import use_linear_stages
from context_engine.store.sqlite_file import FILE_NAME, StoreError, StoreFile  # StoreError: raised here too

LEGACY_SNAPSHOTS = "store"
log = logging.getLogger(__name__)  # pickle snapshot generations of earlier versions: never loaded


def _patch_mongomock_match_pushdown() -> None:
    """Serve a leading `$match` with `find()` instead of copying the whole collection first.

    mongomock's `aggregate` deep-copies every document before running the pipeline (0.7 s for
    7k GitHub records); MongoDB itself pushes a leading `$match` down to an index scan. Same
    results, only the matching documents copied.
    """
    from mongomock import aggregate as mm_aggregate
    from mongomock.collection import Collection

    if getattr(Collection.aggregate, "_match_pushdown", False):
        return

    def aggregate(self, pipeline, session=None, **_unused):
        pipeline = list(pipeline)
        if pipeline and set(pipeline[0]) == {"$match"}:
            docs = list(self.find(pipeline[0]["$match"]))
            pipeline = pipeline[1:]
        else:
            docs = list(self.find())
        return mm_aggregate.process_pipeline(docs, self.database, pipeline, session)

    aggregate._match_pushdown = True  # type: ignore[attr-defined]
    Collection.aggregate = aggregate


def _patch_mongomock_cursor_slicing() -> None:
    """Make iterating a mongomock cursor linear.

    mongomock 4.3's `Cursor.__next__` re-slices the whole result list (`results[skip:]`) for every
    document it returns, so reading n documents costs O(n^2): 27 s of a 70 s ingest of the 52,739
    Slack messages. The slice is now made once per result list, skip and limit.
    """
    from mongomock.collection import Cursor

    if getattr(Cursor._compute_results, "_sliced_once", False):
        return
    original = Cursor._compute_results

    def _compute_results(self, with_limit_and_skip=False):
        results = original(self, with_limit_and_skip=False)
        if not with_limit_and_skip:
            return results
        key = (id(results), self._skip, self._limit)
        if getattr(self, "_sliced_key", None) != key:
            sliced = results[self._skip :]
            self._sliced = sliced[: abs(self._limit)] if self._limit else sliced
            self._sliced_key = key
        return self._sliced

    _compute_results._sliced_once = True  # type: ignore[attr-defined]
    Cursor._compute_results = _compute_results


def _patch_mongomock() -> None:
    """Every change this module makes to mongomock, before any client of it is used (idempotent)."""
    _patch_mongomock_match_pushdown()
    _patch_mongomock_cursor_slicing()
    use_linear_stages()


ENGINE_COLLECTIONS = ("index_vectors", "index_revisions", "store_meta")
KINDS = "collection_kinds"
"""Where a tenant's own collection specs are stored: one record per tenant and collection (`_id` =
`record_id(tenant, name)`, `ref` = the name, `spec` = `CollectionSpec.to_json()`), written in the same
commit as the records, so every process and replica sees a collection together with its spec. No
query, schema or answer ever reads it: it is not a collection `collection()` hands out."""
SHARED_POLL_SECONDS = 1.0  # how often a replica asks MongoDB whether another one committed


def record_id(tenant: str, ref: str) -> str:
    """The stored `_id`: stable per tenant and source key, so re-ingesting upserts."""
    return hashlib.blake2b(f"{tenant}\x00{ref}".encode(), digest_size=12).hexdigest()


@dataclass
class WriteStats:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: WriteStats) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.errors.extend(other.errors)


class DocumentStore:
    """Collections of one deployment. Use `open_store(settings)`."""

    def __init__(self, db: Any, data_dir: Path, embedded: bool, file: StoreFile | None = None):
        self.db = db
        self.data_dir = data_dir
        self.embedded = embedded
        self.file = file
        self.generation = file.generation() if file else 0  # the committed state this process holds
        self._checked = time.monotonic()
        if file is None and not embedded:
            meta = self.engine_collection("store_meta").find_one({"_id": "generation"})
            self.generation = (meta or {}).get("value", 0)
        self.revision = 0  # bumped on every write: derived indexes (BM25 for $text) rebuild on change
        self._pending: dict[tuple[str, str], dict[str, Any] | None] = {}  # written, not yet committed
        # The embedded store reads a collection's rows on its first use: a question about pull requests
        # never pays for parsing every Slack message (most of `ask`'s cold start on a large store).
        # Known are the built-in kinds and every collection with a committed row (a tenant's own).
        stored = set(file.collections()) - {KINDS} if file is not None else set()
        self._unread: set[str] = set(BUILTIN_NAMES) | stored if file is not None else set()
        self._read_lock = threading.Lock()
        self._kinds_read = file is None  # the embedded store reads `collection_kinds` on first use
        self._own_names: set[str] = stored - set(
            BUILTIN_NAMES
        )  # every tenant's own collection names (checked again on a miss)

    def stale(self) -> bool:
        """Another process committed since this store was loaded (MongoDB: another replica did, read
        at most once a second: the records are live, what is derived from them, catalogs, is not)."""
        if self.file is not None:
            return self.file.generation() != self.generation
        now = time.monotonic()
        if now - self._checked < SHARED_POLL_SECONDS:
            return False
        self._checked = now
        meta = self.engine_collection("store_meta").find_one({"_id": "generation"})
        return (meta or {}).get("value", 0) != self.generation

    def engine_collection(self, name: str) -> Any:
        """The engine's own collections beside the records on MongoDB: the shared embedding vectors
        (`index_vectors`), each tenant's index revision (`index_revisions`), the store's commit counter
        (`store_meta`). The embedded store keeps these in its data dir instead: None."""
        if name not in ENGINE_COLLECTIONS:
            raise StoreError(f"unknown engine collection {name!r}")
        return None if self.embedded else self.db[name]

    def known(self, name: object) -> bool:
        """Whether `name` is a collection of this store: a built-in kind or some tenant's own."""
        if not isinstance(name, str) or name in RESERVED:
            return False
        if name in BUILTIN_NAMES or name in self._own_names:
            return True
        try:
            check_name(name)
        except SpecError:
            return False
        self._read_own_names()  # another process may have added it since
        return name in self._own_names

    def _read_own_names(self) -> None:
        self._own_names |= {
            doc["ref"]
            for doc in self._kinds_collection().find({}, {"ref": 1})
            if isinstance(doc.get("ref"), str) and doc["ref"] not in RESERVED
        }

    def _check(self, name: object) -> str:
        if not self.known(name):
            raise StoreError(
                f"unknown collection {str(name)[:80]!r}; known: {', '.join([*BUILTIN_NAMES, *sorted(self._own_names)])}"
            )
        return name  # type: ignore[return-value]

    def collection(self, name: str) -> Any:
        self._check(name)
        if name in self._unread:
            self._read(name)
        return self.db[name]

    def _read(self, name: str) -> None:
        with self._read_lock:
            if name not in self._unread:
                return
            self._insert(self.db[name], self.file.read(name))  # the committed rows, as they were written
            self._unread.discard(name)

    def scoped(self, name: str, scope: dict[str, Any]) -> ScopedDocuments:
        """The collection's records within `scope` (a tenant and access filter), as schema discovery
        reads them. A committed collection this process has not loaded is read by SQLite in place:
        discovering what one asker may read never loads 600k Slack messages into memory."""
        self._check(name)
        if name in self._unread and _plain_scope(scope):
            return StoredScope(self.db[name], scope, self.file, lambda: self.collection(name))
        return ScopedDocuments(self.collection(name), scope)

    def find_refs(self, name: str, scope: dict[str, Any], refs: Iterable[str]) -> list[dict[str, Any]]:
        """The records of `refs` (within `scope["tenant_id"]`) that match `scope`, in `refs` order.

        The same answer as `find({**scope, "ref": {"$in": refs}})`; the embedded store looks each record up
        by its `_id` and applies mongomock's own matcher to it instead of scanning the collection.
        """
        refs = list(dict.fromkeys(str(r) for r in refs))
        self._check(name)
        if name in self._unread:  # committed rows not loaded here: read just these from SQLite
            from mongomock.filtering import filter_applies

            keys = [record_id(scope["tenant_id"], ref) for ref in refs]
            return [doc for doc in self.file.read_ids(name, keys) if filter_applies(scope, doc)]
        coll = self.collection(name)
        if not self.embedded:
            found = {d["ref"]: d for d in coll.find({**scope, "ref": {"$in": refs}})}
            return [found[r] for r in refs if r in found]
        from mongomock.filtering import filter_applies

        docs = coll._store  # mongomock's per-collection store, keyed by _id
        out = []
        for ref in refs:
            key = record_id(scope["tenant_id"], ref)
            if key in docs and filter_applies(scope, doc := docs[key]):
                out.append(copy.deepcopy(doc))
        return out

    def stored_refs(self, name: str, tenant: str, refs: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The tenant's stored records of `refs` by ref, to be read and never modified (no copies:
        ingest asks this of every record it writes)."""
        ids = {record_id(tenant, str(ref)): str(ref) for ref in refs}
        return {ids[i]: doc for i, doc in self._by_id(self.collection(name), list(ids)).items()}

    def tenant_records(self, name: str, tenant: str) -> Iterable[dict[str, Any]]:
        """The tenant's records of `name` in store order, to be read and never modified: on the
        embedded store the stored documents themselves, so chunking a million Slack messages does
        not first copy them all (`find` deep-copies each document it returns)."""
        coll = self.collection(name)
        if self.embedded:
            return [doc for doc in coll._store._documents.values() if doc.get("tenant_id") == tenant]
        return coll.find({"tenant_id": tenant})

    def damaged_rows(self) -> dict[str, int]:
        """Per collection, the stored rows skipped as damaged (every collection is read to know)."""
        if self.file is None:
            return {}
        for name in self.collections():
            self.collection(name)
        self._kinds_collection()
        return self.file.damaged_rows()

    def count(self, name: str, tenant: str) -> int:
        return self.collection(name).count_documents({"tenant_id": tenant})

    def tenants(self) -> list[str]:
        found: set[str] = set(self.file.tenants()) if self.file is not None else set()
        for name in self.collections():
            if name in self._unread:
                continue  # its committed rows' tenants are in `found` already
            if self.embedded:  # mongomock's distinct copies every document first: read the map directly
                values = (doc.get("tenant_id") for doc in self.collection(name)._store._documents.values())
            else:
                values = self.collection(name).distinct("tenant_id")
            found.update(t for t in values if isinstance(t, str))
        return sorted(found)

    def collections(self) -> list[str]:
        """Every collection of the store: the built-in kinds, then every tenant's own, by name."""
        self._read_own_names()
        return [*BUILTIN_NAMES, *sorted(self._own_names - set(BUILTIN_NAMES))]

    # ------------------------------------------------------------------ a tenant's own kinds
    def _kinds_collection(self) -> Any:
        coll = self.db[KINDS]
        if not self._kinds_read:
            with self._read_lock:
                if not self._kinds_read:
                    self._insert(coll, self.file.read(KINDS))
                    self._kinds_read = True
        return coll

    def save_kind(self, tenant: str, spec: CollectionSpec) -> None:
        """Store (or replace) `tenant`'s own kind `spec`; committed with the next `commit()`, so a
        collection and its spec become visible together. A built-in or reserved name is refused
        (`SpecError`, one line): a tenant's spec never redefines an engine kind."""
        check_tenant(tenant)
        if not isinstance(spec, CollectionSpec):
            raise SpecError(f"a collection spec is a CollectionSpec, not {type(spec).__name__}")
        if spec.builtin or spec.name in BUILTIN_NAMES or spec.name in RESERVED:
            raise SpecError(f"collection name {spec.name!r} is taken by the engine; choose another")
        doc = {
            "_id": record_id(tenant, spec.name),
            "tenant_id": tenant,
            "ref": spec.name,
            "acl": [],
            "spec": spec.to_json(),
        }
        coll = self._kinds_collection()
        existing = self._by_id(coll, [doc["_id"]])
        if existing.get(doc["_id"]) == doc:
            return
        if existing:
            self._replace(coll, [doc])
        else:
            self._insert(coll, [doc])
        self._own_names.add(spec.name)
        self.revision += 1
        self._pending[(KINDS, doc["_id"])] = doc

    def kinds(self, tenant: str) -> Registry:
        """The kinds `tenant` has: the built-in ones and its own, as stored. A stored spec that no longer
        reads as one (a damaged row, a spec of an older format) is left out, with a warning: its
        collection is then unknown to the tenant, never half-understood."""
        own = []
        for doc in self._kinds_collection().find({"tenant_id": tenant}):
            try:
                spec = CollectionSpec.from_json(doc.get("spec"))
                if spec.builtin or spec.name != doc.get("ref"):
                    raise SpecError("the spec names another collection")
            except SpecError as exc:
                log.warning(
                    "context-engine: warning: the stored spec of %r (tenant %s) is left out: %s",
                    doc.get("ref"),
                    tenant,
                    exc,
                )
                continue
            own.append(spec)
        try:
            return Registry(own)
        except SpecError as exc:  # a spec stored under a name the engine has since taken
            log.warning("context-engine: warning: tenant %s: %s; its own kinds are left out", tenant, exc)
            return Registry()

    def upsert(self, name: str, tenant: str, records: Iterable[dict[str, Any]]) -> WriteStats:
        """Insert or replace records by their `ref` within a tenant; identical ones are left alone.
        `name` is a built-in kind or one of the tenant's own (`save_kind` first)."""
        if name not in BUILTIN_NAMES and name not in self.kinds(tenant):
            raise StoreError(f"collection {str(name)[:80]!r} is not a kind of tenant {tenant!r}: save its spec first")
        coll = self.collection(name)
        stats = WriteStats()
        docs: dict[str, dict[str, Any]] = {}
        for record in records:
            doc = {k: v for k, v in record.items() if k not in ("_id", "tenant_id")}
            doc["_id"] = record_id(tenant, doc["ref"])
            doc["tenant_id"] = tenant
            doc.setdefault("acl", [])  # deny by default: nobody said who may read it
            docs[doc["_id"]] = doc  # the last of duplicates within one batch wins
        if not docs:
            return stats
        existing = self._by_id(coll, list(docs))
        new = [d for i, d in docs.items() if i not in existing]
        changed = [d for i, d in docs.items() if i in existing and existing[i] != d]
        stats.inserted, stats.updated = len(new), len(changed)
        stats.unchanged = len(docs) - len(new) - len(changed)
        if new or changed:
            self.revision += 1
            self._pending.update(((name, d["_id"]), d) for d in new + changed)
        if new:
            self._insert(coll, new)
        if changed:
            self._replace(coll, changed)
        return stats

    def _insert(self, coll: Any, docs: Iterable[dict[str, Any]]) -> None:
        if self.embedded:
            # Straight into mongomock's ordered document map: `insert_many` BSON-encodes and deep-copies
            # every record (seconds for a 10k-record store, and a second copy of a million Slack
            # messages held through a whole ingest). `normalize` has refused what BSON could not hold.
            documents = coll._store._documents
            for doc in docs:
                documents[doc["_id"]] = doc
        else:
            coll.insert_many(docs, ordered=False)

    # mongomock answers `{"_id": {"$in": ids}}` by scanning the id list for every document (O(n*m):
    # minutes for 50k records); the embedded store goes to its documents by `_id` instead.
    def _by_id(self, coll: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
        if self.embedded:
            docs = coll._store
            return {i: docs[i] for i in ids if i in docs}
        return {d["_id"]: d for d in coll.find({"_id": {"$in": ids}})}

    def _delete_ids(self, coll: Any, ids: list[str]) -> None:
        if self.embedded:
            docs = coll._store
            for i in ids:
                if i in docs:
                    del docs[i]
        else:
            coll.delete_many({"_id": {"$in": ids}})

    def _replace(self, coll: Any, docs: list[dict[str, Any]]) -> None:
        if self.embedded:
            # mongomock scans the collection once per replace_one; one delete + insert is linear.
            self._delete_ids(coll, [d["_id"] for d in docs])
            self._insert(coll, docs)
        else:
            from pymongo import ReplaceOne

            coll.bulk_write([ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs], ordered=False)

    def delete_missing(self, name: str, tenant: str, keep_refs: set[str], scope: dict[str, Any]) -> int:
        """Remove the tenant's records within `scope` whose ref is not in `keep_refs` (--prune)."""
        coll = self.collection(name)
        gone = [
            d["_id"] for d in coll.find({"tenant_id": tenant, **scope}, {"ref": 1}) if d.get("ref") not in keep_refs
        ]
        if gone:
            self.revision += 1
            self._pending.update(((name, i), None) for i in gone)
            self._delete_ids(coll, gone)
        return len(gone)

    def ensure_indexes(self) -> None:
        for name in self.collections():
            self.collection(name).create_index([("tenant_id", 1), ("ref", 1)], name="tenant_ref")

    def commit(self) -> None:
        """Write what changed since the last commit, in one transaction; MongoDB writes are already
        durable, and its commit counter tells the other replicas that something changed."""
        if not self._pending:
            return
        if self.file is None:
            from pymongo import ReturnDocument

            meta = self.engine_collection("store_meta").find_one_and_update(
                {"_id": "generation"}, {"$inc": {"value": 1}}, upsert=True, return_document=ReturnDocument.AFTER
            )
            self.generation = meta["value"]
            self._pending.clear()
            return
        self.generation = self.file.write((name, doc_id, doc) for (name, doc_id), doc in self._pending.items())
        self._pending.clear()


def _plain_scope(scope: dict[str, Any]) -> bool:
    """`{"tenant_id": str, "acl": {"$in": [str, ...]}}`, the shape SQLite evaluates (`StoreFile.scoped_seqs`)."""
    acl = scope.get("acl")
    return (
        set(scope) == {"tenant_id", "acl"}
        and isinstance(scope["tenant_id"], str)
        and isinstance(acl, dict)
        and set(acl) == {"$in"}
        and isinstance(acl["$in"], list)
        and bool(acl["$in"])
        and all(isinstance(p, str) for p in acl["$in"])
    )


class ScopedDocuments:
    """A collection's records within a scope: how many, a sample, the distinct values at a few paths."""

    def __init__(self, collection: Any, scope: dict[str, Any]):
        self.collection = collection
        self.scope = scope
        self.name = collection.name

    def count(self) -> int:
        return self.collection.count_documents(self.scope)

    def sample(self, total: int, size: int) -> list[dict[str, Any]]:
        """`size` records drawn with a fixed seed (all of them when there are no more), in the order
        drawn; on the embedded store the same records whether the collection is loaded or not."""
        if total <= size:
            return list(self.collection.find(self.scope))
        if type(self.collection).__module__.startswith("mongomock"):
            # mongomock's $sample copies the whole collection first; sampling ids is 10x cheaper.
            # Its `$in` scans the id list per document, so the chosen ones are read by `_id` directly.
            ids = [d["_id"] for d in self.collection.find(self.scope, {"_id": 1})]
            return [self.collection._store[i] for i in random.Random(0).sample(ids, size)]
        return list(self.collection.aggregate([{"$match": self.scope}, {"$sample": {"size": size}}]))

    def distinct_values(self, paths: list[list[str]]) -> list[list[Any]]:
        """The distinct values at each path (a list of keys followed through objects only, as
        `json_extract` does: an array on the way reaches nothing) over the records in scope."""
        seen: list[dict[str, Any]] = [{} for _ in paths]
        for doc in self.collection.find(self.scope, dict.fromkeys({path[0] for path in paths}, 1)):
            for path, values in zip(paths, seen):
                node: Any = doc
                for key in path:
                    node = node.get(key) if isinstance(node, dict) else None
                if node is not None:
                    values.setdefault(repr(node), node)
        return [list(values.values()) for values in seen]

    def index_information(self) -> dict[str, Any]:
        return self.collection.index_information()


class StoredScope(ScopedDocuments):
    """The same, answered by SQLite from the committed rows (the collection is not loaded)."""

    def __init__(self, collection: Any, scope: dict[str, Any], file: StoreFile, load: Callable[[], Any]):
        super().__init__(collection, scope)
        self.file = file
        self._load = load  # the loaded collection, for what SQLite cannot answer
        self._seqs: list[int] | None = None

    def _scoped_seqs(self) -> list[int]:
        if self._seqs is None:
            self._seqs = self.file.scoped_seqs(self.name, self.scope["tenant_id"], self.scope["acl"]["$in"])
        return self._seqs

    def count(self) -> int:
        return len(self._scoped_seqs())

    def sample(self, total: int, size: int) -> list[dict[str, Any]]:
        seqs = self._scoped_seqs()
        return self.file.read_seqs(seqs if len(seqs) <= size else random.Random(0).sample(seqs, size))

    def distinct_values(self, paths: list[list[str]]) -> list[list[Any]]:
        if any('"' in key for path in paths for key in path):  # a key SQLite's JSON path syntax cannot quote
            return ScopedDocuments(self._load(), self.scope).distinct_values(paths)
        return self.file.distinct_values(self.name, self.scope["tenant_id"], self.scope["acl"]["$in"], paths)


IN_PROCESS_URI = "mongomock://"
_in_process: dict[str, Any] = {}
_in_process_lock = threading.Lock()


def _in_process_mongodb(uri: str) -> Any:
    """`MONGODB_URI=mongomock://NAME`: one in-memory MongoDB per NAME, shared by every engine instance
    of this process, through the same pymongo code path as a real server (tests and demos of several
    replicas sharing one database; nothing is persisted)."""
    import mongomock

    _patch_mongomock()
    with _in_process_lock:
        if uri not in _in_process:
            _in_process[uri] = mongomock.MongoClient(tz_aware=False)
        return _in_process[uri]


def has_data(settings: Settings) -> bool:
    if settings.mongodb_uri:
        return True
    return (settings.data_dir / FILE_NAME).exists() or (settings.data_dir / LEGACY_SNAPSHOTS / "CURRENT").exists()


def mongodb_client(uri: str, what: str = "MONGODB_URI") -> Any:
    """A client of the MongoDB at `uri` (`mongomock://NAME`: the in-process one), reachable, or a
    StoreError naming `what` in one line."""
    if uri.startswith(IN_PROCESS_URI):
        return _in_process_mongodb(uri)
    import pymongo

    try:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=3000, tz_aware=False)
        client.admin.command("ping")
    except Exception as exc:  # noqa: BLE001 - pymongo raises many kinds; the user needs one line
        raise StoreError(f"cannot reach MongoDB at {what}: {exc.__class__.__name__}: {exc}") from None
    return client


def open_store(settings: Settings) -> DocumentStore:
    if settings.mongodb_uri:
        client = mongodb_client(settings.mongodb_uri)
        return DocumentStore(client[settings.mongodb_db], settings.data_dir, embedded=False)

    import mongomock

    _patch_mongomock()
    db = mongomock.MongoClient(tz_aware=False)[settings.mongodb_db]
    path = settings.data_dir / FILE_NAME
    if not path.exists() and (settings.data_dir / LEGACY_SNAPSHOTS / "CURRENT").exists():
        raise StoreError(
            f"{settings.data_dir} holds pickle snapshots of an older version, which are never loaded "
            f"(unpickling runs code): delete {settings.data_dir / LEGACY_SNAPSHOTS} and ingest again"
        )
    return DocumentStore(db, settings.data_dir, embedded=True, file=StoreFile(path, create=True))


def strip_hidden(doc: dict[str, Any]) -> dict[str, Any]:
    """A record as it may leave the store."""
    return {k: v for k, v in doc.items() if k not in HIDDEN_FIELDS}

"""The embedded store's file: SQLite in WAL mode, one row per record, JSON with tagged dates.

Why SQLite: durable and crash-safe (a commit is one transaction), incremental (a webhook writes the
rows it changed, not the store), readable by several processes at once (a server sees what a CLI
ingest wrote: the `generation` in `meta` tells it to reload), and nothing in it is code — loading a
data dir never unpickles anything.

Encoding: JSON cannot hold a datetime, so a row is its JSON with every datetime written as its ISO
string, plus a `dates` column listing where the datetimes are (`[[path, iso], ...]`, a path being the
keys and list positions down to the value). Reading parses the JSON (orjson) and puts the few
datetimes back where the list says: no walk over every string of a record, which is most of a cold
start on a large store. Rows written before this (their `dates` is NULL) tag their strings instead —
a datetime as "\\x00d:<ISO>", a string starting with NUL as "\\x00s:<string>" — and are read that way.

Damage stays local: a row that cannot be a record (its JSON or date list unreadable, a body that is not
an object, an `_id` other than the row's id, a `tenant_id`, `ref` or `acl` of a type the store does not
write) is skipped and counted for that row alone, and no SQL scan over the JSON fails on it or lets it
widen a scope (`json_valid_and`): one damaged row of one tenant never fails a question of another. A
damaged `generation` reads as `DAMAGED_GENERATION`, which no derived state was stamped with, and the
next commit replaces it. A full disk or a failing file is a `StoreFileError` (one line), never a
half-written commit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

FILE_NAME = "store.sqlite"
_DATE, _ESCAPED = "\x00d:", "\x00s:"
DAMAGED_GENERATION = -1  # a `generation` that is not a number: equal to no stamp, so derived state rebuilds
log = logging.getLogger(__name__)


class StoreError(RuntimeError):
    """The store cannot be opened or written; the message is one line for the user."""


class StoreFileError(StoreError):
    """The store's file cannot be read or written: a full disk, an I/O error, not a database (the CLI's
    exit 4, "the data dir cannot be read or written")."""


class RowDamaged(ValueError):
    """A stored row that cannot be a record; the message says why."""


def _untag(value: str) -> Any:
    return datetime.fromisoformat(value[len(_DATE) :]) if value.startswith(_DATE) else value[len(_ESCAPED) :]


def _decode_object(obj: dict[str, Any]) -> dict[str, Any]:
    """json's object_hook: the parser hands over each object once, innermost first, so only the
    strings directly in an object (or in a list of scalars inside it) need looking at."""
    for key, value in obj.items():
        if type(value) is str:
            if value[:1] == "\x00":
                obj[key] = _untag(value)
        elif type(value) is list:
            obj[key] = _decode_list(value)
    return obj


def _decode_list(items: list[Any]) -> list[Any]:
    for i, value in enumerate(items):
        if type(value) is str and value[:1] == "\x00":
            items[i] = _untag(value)
        elif type(value) is list:
            items[i] = _decode_list(value)
    return items


def dumps(doc: dict[str, Any]) -> tuple[str, str]:
    """(the row's JSON with datetimes as ISO strings, where those datetimes are)."""
    dates: list[list[Any]] = []

    def plain(value: Any, path: list[Any]) -> Any:
        if isinstance(value, datetime):
            dates.append([path, value.isoformat()])
            return value.isoformat()
        if isinstance(value, dict):
            return {k: plain(v, [*path, k]) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v, [*path, i]) for i, v in enumerate(value)]
        return value

    body = json.dumps(plain(doc, []), ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return body, json.dumps(dates, ensure_ascii=False, separators=(",", ":"))


def loads(body: str, dates: str | None) -> dict[str, Any]:
    if dates is None:  # a row of the tagged format
        return json.loads(body, object_hook=_decode_object)
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:  # NaN or Infinity, which orjson refuses and json writes
        doc = json.loads(body)
    for path, iso in orjson.loads(dates):
        node = doc
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = datetime.fromisoformat(iso)
    return doc


# The fields the store itself relies on, with the only type it writes in each: `_id` keys the loaded
# documents (a row claiming another row's id would replace that record, of any tenant), `tenant_id` and
# `acl` are the scope (a list as `tenant_id` would match two tenants, a string `acl` "*" would match
# everyone), `ref` is how records are found again. An absent one is harmless: no scope matches it.
_OPTIONAL_TEXT = ("tenant_id", "ref")


def record(doc_id: str, body: str, dates: str | None) -> dict[str, Any]:
    """The record stored in one row; `RowDamaged` when the row cannot be one."""
    try:
        doc = loads(body, dates)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise RowDamaged(f"unreadable: {exc.__class__.__name__}: {exc}") from None
    if type(doc) is not dict:
        raise RowDamaged(f"its body is a JSON {type(doc).__name__}, not an object")
    if doc.get("_id") != doc_id:
        raise RowDamaged("its _id is not the row's id")
    for key in _OPTIONAL_TEXT:
        if key in doc and type(doc[key]) is not str:
            raise RowDamaged(f"its {key} is a {type(doc[key]).__name__}, not a string")
    acl = doc.get("acl", [])
    if type(acl) is not list or any(type(p) is not str for p in acl):
        raise RowDamaged("its acl is not a list of strings")
    return doc


# Scans that read the JSON in place (schema discovery, the tenant list) must not fail on a damaged row
# either, and must not let one widen a scope; they stay as fast as a scan that trusts every row (the
# full test above in SQL doubles a 600k-message scan). `json_valid_and(condition)`: a CASE, because
# SQLite does not promise to evaluate AND's operands in order and a JSON function on malformed JSON is
# an error, not NULL, so every JSON function of a scan is inside it. The scope compares `tenant_id` to
# a string (a list or a number never equals one) and reads `acl` only as an array (a string "*" would
# match `IN` as itself). The rest of the damage (an `_id`, a `ref`, dates) is found when the row is
# parsed: such a row may be counted by a scan, within its own tenant and access list, never returned.
def json_valid_and(condition: str) -> str:
    return f"CASE WHEN json_valid(body) THEN {condition} ELSE 0 END"


_OF_TENANT = json_valid_and("json_extract(body, '$.tenant_id') = ?")


def _scan_tenants(cursor: Any) -> list[str]:
    """The distinct `tenant_id` strings of every row (SQLite reads the JSON: no row is parsed in Python; a
    list's json_extract would be its JSON text)."""
    rows = cursor.execute(
        "SELECT DISTINCT json_extract(body, '$.tenant_id') FROM docs WHERE "
        + json_valid_and("json_type(body, '$.tenant_id') = 'text'")
    )
    return sorted(t for (t,) in rows if isinstance(t, str))


def _meta_number(cursor: Any, key: str) -> int | None:
    """A counter kept in `meta` (0 when there is none yet); None when it is damaged: not a whole number."""
    row = cursor.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return 0
    try:
        value = int(row[0])
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _kept_tenants(cursor: Any) -> list[str] | None:
    """The tenant list `write` keeps in `meta`; None when there is none (a store written before it
    was kept) or it is not a JSON list of names (a damaged row): the rows are then scanned instead."""
    row = cursor.execute("SELECT value FROM meta WHERE key = 'tenants'").fetchone()
    try:
        kept = json.loads(row[0]) if row else None
    except ValueError:
        return None
    return kept if isinstance(kept, list) and all(isinstance(t, str) for t in kept) else None


class StoreFile:
    """One connection to `<data-dir>/store.sqlite`. Every SQLite error leaves as a `StoreFileError`."""

    def __init__(self, path: Path, create: bool):
        self.path = path
        self.damaged: dict[int, tuple[str, str]] = {}  # row number -> (collection, why), each row once
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE ... COMMIT)
            self.conn = sqlite3.connect(
                path if create else f"file:{path}?mode=rw",
                uri=not create,
                isolation_level=None,
                timeout=30,
                check_same_thread=False,
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at each checkpoint, never corrupt
            # `seq` keeps the order records were written in (a replaced record moves to the end, as in
            # the query engine), so a store read back lists records exactly as the writer held them.
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS docs (seq INTEGER PRIMARY KEY, coll TEXT NOT NULL, "
                "id TEXT NOT NULL, body TEXT NOT NULL, dates TEXT, UNIQUE (coll, id))"
            )
            if "dates" not in {row[1] for row in self.conn.execute("PRAGMA table_info(docs)")}:
                self.conn.execute("ALTER TABLE docs ADD COLUMN dates TEXT")  # a store of the tagged format
            self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot open the store {path}: {exc}") from None

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot read the store {self.path}: {exc}") from None

    def _records(
        self, rows: Iterable[tuple[int, str, str, str, str | None]]
    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """(seq, id, record) of each sound row of `rows` (seq, collection, id, body, dates); a damaged
        one is counted in `damaged`, and one warning line per call says how many were met for the first
        time (a server that reads the same row again logs it once)."""
        skipped = []
        try:
            for seq, row_coll, doc_id, body, dates in rows:
                try:
                    yield seq, doc_id, record(doc_id, body, dates)
                except RowDamaged as exc:
                    if seq not in self.damaged:
                        self.damaged[seq] = (row_coll, str(exc))
                        skipped.append(seq)
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot read the store {self.path}: {exc}") from None
        if skipped:
            row_coll, why = self.damaged[skipped[0]]
            log.warning(
                "context-engine: warning: skipped %d damaged row(s) of %s in %s (row %d: %s); "
                "the other records answer as usual",
                len(skipped),
                row_coll,
                self.path,
                skipped[0],
                why,
            )

    def damaged_rows(self) -> dict[str, int]:
        """How many damaged rows each collection had among those read so far."""
        counts: dict[str, int] = {}
        for coll, _why in self.damaged.values():
            counts[coll] = counts.get(coll, 0) + 1
        return dict(sorted(counts.items()))

    def generation(self) -> int:
        """Bumped by every commit: readers compare it to what they loaded."""
        try:
            generation = _meta_number(self.conn, "generation")
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot read the store {self.path}: {exc}") from None
        return DAMAGED_GENERATION if generation is None else generation

    def tenants(self) -> list[str]:
        """Every tenant with a committed record, as `write` keeps them in `meta` (a cold `ask` reads one
        row, not every record: 10 s at a million). A store written before that is scanned."""
        try:
            kept = _kept_tenants(self.conn)
            return kept if kept is not None else _scan_tenants(self.conn)
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot read the store {self.path}: {exc}") from None

    def collections(self) -> list[str]:
        """The collections with a committed row. A skip scan of the (coll, id) index: one index seek
        per collection, not a pass over every row (a cold start on a million rows reads a handful)."""
        return [
            name
            for (name,) in self._query(
                "WITH RECURSIVE c(name) AS (SELECT min(coll) FROM docs UNION ALL "
                "SELECT (SELECT min(coll) FROM docs WHERE coll > c.name) FROM c WHERE c.name IS NOT NULL) "
                "SELECT name FROM c WHERE name IS NOT NULL"
            )
        ]

    def read(self, coll: str) -> Iterator[dict[str, Any]]:
        try:
            rows = self.conn.execute("SELECT seq, coll, id, body, dates FROM docs WHERE coll = ? ORDER BY seq", (coll,))
        except sqlite3.Error as exc:
            raise StoreFileError(f"cannot read the store {self.path}: {exc}") from None
        for _seq, _id, doc in self._records(rows):
            yield doc

    # ------------------------------------------------------------------ scoped reads (schema discovery)
    # A tenant and access scope evaluated by SQLite over the JSON, so discovering what an asker may
    # read never parses, or holds in memory, every record of a large collection (600k Slack messages).
    # `acl` matches as MongoDB's `{"acl": {"$in": principals}}` over the list a row holds.
    _SCOPE = "coll = ? AND " + json_valid_and(
        "json_extract(body, '$.tenant_id') = ? AND json_type(body, '$.acl') = "
        "'array' AND EXISTS (SELECT 1 FROM json_each(body, '$.acl') "
        "WHERE json_each.value IN ({}))"
    )

    def scoped_seqs(self, coll: str, tenant: str, principals: list[str]) -> list[int]:
        """The row numbers of the collection's records in scope, in write order."""
        where = self._SCOPE.format(", ".join("?" * len(principals)))
        return [
            seq
            for (seq,) in self._query(f"SELECT seq FROM docs WHERE {where} ORDER BY seq", (coll, tenant, *principals))
        ]

    def last_seq(self) -> int:
        """The number of the last row written (deleted last rows included: numbers are never reused)."""
        (top,) = self.conn.execute(
            "SELECT max(coalesce((SELECT max(seq) FROM docs), 0), coalesce((SELECT "
            "CAST(value AS INTEGER) FROM meta WHERE key = 'seq'), 0))"
        ).fetchone()
        return top

    def written_since(self, seq: int, tenant: str, colls: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
        """(collection, record) of the tenant's records in `colls` written after row `seq`, in write
        order: a range of the row numbers, so what a derived index has not yet seen costs O(changed)."""
        colls = list(colls)
        return [
            (coll, loads(body, dates))
            for coll, body, dates in self.conn.execute(
                f"SELECT coll, body, dates FROM docs WHERE seq > ? AND coll IN ({', '.join('?' * len(colls))}) "
                "AND json_extract(body, '$.tenant_id') = ? ORDER BY seq",
                (seq, *colls, tenant),
            )
        ]

    def read_ids(self, coll: str, ids: list[str]) -> list[dict[str, Any]]:
        """The committed records of `ids` in one collection, in `ids` order (unknown ids skipped)."""
        return self._read_by("id", ids, "coll = ? AND ", (coll,))

    def read_seqs(self, seqs: list[int]) -> list[dict[str, Any]]:
        """The records of `seqs`, in `seqs` order."""
        return self._read_by("seq", seqs, "", ())

    def _read_by(self, column: str, keys: list[Any], where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The records whose `column` ("id" or "seq") is one of `keys`, in `keys` order."""
        found: dict[Any, dict[str, Any]] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            part = keys[start : start + 500]
            rows = self._query(
                f"SELECT seq, coll, id, body, dates FROM docs WHERE {where}{column} IN ({', '.join('?' * len(part))})",
                (*params, *part),
            )
            found.update(((seq if column == "seq" else doc_id), doc) for seq, doc_id, doc in self._records(rows))
        return [found[k] for k in keys if k in found]

    def distinct_values(self, coll: str, tenant: str, principals: list[str], paths: list[list[str]]) -> list[list[Any]]:
        """The distinct values at each path (a list of keys, no array crossed) over the records in
        scope; datetimes stay ISO strings. SQLite extracts each value as JSON text; Python keeps the
        distinct texts and parses only those, so a pass over 600k records is a set insertion per value."""
        where = self._SCOPE.format(", ".join("?" * len(principals)))
        columns = ", ".join("json_quote(json_extract(body, ?))" for _ in paths)  # JSON text, whatever the type
        json_paths = ["$" + "".join(f'."{key}"' for key in path) for path in paths]  # no key holds a double quote
        seen: list[set[str]] = [set() for _ in paths]
        adds = [values.add for values in seen]
        for row in self._query(f"SELECT {columns} FROM docs WHERE {where}", (*json_paths, coll, tenant, *principals)):
            for add, text in zip(adds, row):
                add(text)
        return [[orjson.loads(text) for text in sorted(texts) if text != "null"] for texts in seen]

    def write(self, changes: Iterable[tuple[str, str, dict[str, Any] | None]]) -> int:
        """Apply (collection, id, document or None to delete) in one transaction; the new generation.
        On any failure (a full disk included) nothing of it is written and the previous commit stands."""
        cur = self.conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            # Row numbers are never reused (SQLite would give a new row the number of a deleted last
            # one): what was derived from the rows up to some `seq` (the link index) stays valid.
            (top,) = cur.execute("SELECT coalesce(max(seq), 0) FROM docs").fetchone()
            kept_seq = _meta_number(cur, "seq")
            if kept_seq is not None and kept_seq < 2**62:  # a damaged one (any larger) would overflow a row number
                top = max(top, kept_seq)
            kept = _kept_tenants(cur)
            written: set[str] = set()
            emptied: set[str] = set()  # tenants that lost a record: they may have none left
            for coll, doc_id, doc in changes:
                if doc is None:
                    emptied.update(
                        t
                        for (t,) in cur.execute(
                            "SELECT json_extract(body, '$.tenant_id') FROM docs WHERE coll = ? AND id = ? AND "
                            + json_valid_and("1"),
                            (coll, doc_id),
                        )
                    )
                    cur.execute("DELETE FROM docs WHERE coll = ? AND id = ?", (coll, doc_id))
                else:
                    top += 1
                    cur.execute(
                        "INSERT OR REPLACE INTO docs (seq, coll, id, body, dates) VALUES (?, ?, ?, ?, ?)",
                        (top, coll, doc_id, *dumps(doc)),
                    )
                    written.add(doc.get("tenant_id"))
            if kept is None:  # the first write since the list was kept (or it was damaged): one scan
                tenants = set(_scan_tenants(cur))
            else:
                tenants = set(kept) | {t for t in written if isinstance(t, str)}
                tenants -= {
                    t
                    for t in emptied - written
                    if not cur.execute(f"SELECT EXISTS (SELECT 1 FROM docs WHERE {_OF_TENANT})", (t,)).fetchone()[0]
                }
            generation = self.generation() + 1
            if generation <= 0:  # the stored one was damaged: number on from the clock, past any count of
                generation = int(time.time())  # commits, so nothing derived before the damage matches it
            cur.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [
                    ("generation", str(generation)),
                    ("seq", str(top)),
                    ("tenants", json.dumps(sorted(tenants), ensure_ascii=False)),
                ],
            )
            cur.execute("COMMIT")
        except BaseException as exc:
            # SQLite rolls a transaction back by itself on some errors (a full disk: SQLITE_FULL), and
            # a second ROLLBACK would then fail and hide the first error.
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # a failed rollback commits nothing either:
                    self.conn.rollback()  # WAL frames of a transaction never committed are never read
            if isinstance(exc, sqlite3.Error):
                raise StoreFileError(
                    f"cannot write the store {self.path}: {exc}; "
                    "nothing of this commit was written, the previous one stands"
                ) from None
            raise
        return generation

    def close(self) -> None:
        self.conn.close()

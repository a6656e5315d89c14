"""Cross-links between stored records: what a record references, and the records linked to it.

Cross-links are data (docs/ARCHITECTURE.md, the data model): a PR body says "Fixes ENG-231", a Slack thread links the PR's URL,
an ADR links the PR, the issue and the thread. Nothing is stored at ingest time; the links are read
from the records' text when an answer needs them.

- `references(record)`: the references a stored record's text makes, each reduced to a canonical
  target: GitHub PR/issue URLs and `owner/repo#N` (and a bare `#N` in a record that has a `repo`, as
  GitHub itself links it) -> `owner/repo#N`; Jira/Linear URLs and keys -> `ENG-231`; Slack
  permalinks -> the message ref `C0123:1717000000.000300`; GitHub commit URLs -> the sha; any other
  URL (a document's page, an entry of its `links`) stays a URL. These are the forms stored records
  are found by: their `ref`, or one of their URLs (`url`, `html_url`, `permalink`). A document whose
  title starts with a key ("ADR-007: ...") is also found by that key.
- `follow_links(store, tenant, principals, refs)`: a breadth-first walk from some records over
  links in both directions (the records these reference, and the records that reference these),
  every lookup scoped by `scope_filter`, so a record the asker cannot read is never followed.
  Slack messages are followed as threads: a link to or from any message is a link to its thread.

A link reads "source relation target": "acme/infra#812 fixes ENG-231", "ENG-231 discussed in
C02INFRA3K:...", "acme/infra#812 implements DOC-14", "C02INFRA3K:... documented in DOC-14".

Which fields of a record hold such text is its kind's (`kinds`: `link_text`); a tenant's own kind
may also declare references (`references`: an incident's `pr` field holds a pull request's ref), which
link like a reference in text ("INC-7 mentions acme/web#12"), both ways.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from context_engine.kinds import BUILTIN, CollectionSpec, Registry
from context_engine.query.execute import scope_filter
from context_engine.query.schema import values_at
from context_engine.retrievers.chunking import chunk_collection
from context_engine.store.sqlite_file import RowDamaged
from context_engine.store.sqlite_file import record as stored_record

__all__ = ["RELATIONS", "Link", "LinkChain", "LinkedRecord", "Reference", "follow_links", "references"]

# Strongest first: when two records are linked more than once, the strongest relation is kept.
RELATIONS = ("fixes", "implements", "documented in", "discussed in", "mentions")

# Where the built-in kinds' records keep text that can reference other records, for every source shape
# (GitHub, Jira, Slack, pages, git: each spec's `link_text`). A built-in record is read at all of them (a
# stored record does not say its collection; its fields do). Reading a record and searching for
# referencing records use the same paths.
_ANY_TEXT_FIELD = tuple(dict.fromkeys(path for kind in BUILTIN.values() for path in kind.link_text or ()))
_URL_FIELDS = ("url", "html_url", "permalink")

_URL = re.compile(r"https?://[^\s<>|()\[\]{}\"'`]+")
_GITHUB_URL = re.compile(r"^https?://(?:www\.)?github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/(\d+)")
_GITHUB_COMMIT_URL = re.compile(r"^https?://(?:www\.)?github\.com/[\w.-]+/[\w.-]+/commit/([0-9a-f]{7,40})")
_ISSUE_URL = re.compile(r"^https?://[^/]+/(?:browse|[^/]+/issue)/([A-Z][A-Z0-9]+-\d+)")  # Jira, Linear
_SLACK_URL = re.compile(r"^https?://[\w.-]+\.slack\.com/archives/([A-Z0-9]+)/p(\d{10})(\d{6})")
# ASCII-only boundaries: Python's \w also matches CJK, and Chinese text runs straight into keys.
_REPO_REF = re.compile(r"(?<![A-Za-z0-9_./-])([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d+)(?![0-9])")
_KEY = re.compile(r"(?<![A-Za-z0-9_-])([A-Z][A-Z0-9]{1,9}-\d+)(?![A-Za-z0-9_-])")
_BARE_NUMBER = re.compile(r"(?<![A-Za-z0-9_/#&])#(\d+)(?![0-9])")
_TITLE_KEY = re.compile(r"^([A-Z][A-Z0-9]{1,9}-\d+)(?![A-Za-z0-9_-])")

# The words just before a reference say how the records relate ("Fixes ENG-231", "Implemented in #812").
_CUES = (
    ("fixes", re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\W{0,3}$", re.I)),
    ("implemented in", re.compile(r"\bimplemented\s+(?:in|by)\W{0,3}$", re.I)),
    ("implements", re.compile(r"\bimplements?\W{0,3}$", re.I)),
)
_CUE_STRENGTH = {"fixes": 0, "implemented in": 1, "implements": 1, None: 2}


@dataclass(frozen=True)
class Reference:
    """One reference a record makes. `target` is canonical (see the module docstring)."""

    target: str
    kind: str  # github | key | slack | commit | url
    text: str  # as written
    cue: str | None  # "fixes" | "implements" | "implemented in" | None, from the words before it


@dataclass(frozen=True)
class Link:
    """ "source relation target", between two records' refs."""

    source: str
    relation: str
    target: str


@dataclass
class LinkedRecord:
    ref: str
    collection: str
    title: str
    url: str | None
    date: str | None  # ISO 8601
    text: str  # the record's first chunk (a thread: the thread): what an answer may quote
    hop: int  # 0 for a record the walk started from


@dataclass
class LinkChain:
    start: list[str]  # refs of the records the walk started from
    records: list[LinkedRecord] = field(default_factory=list)  # in the order they were reached
    links: list[Link] = field(default_factory=list)

    def record(self, ref: str) -> LinkedRecord | None:
        return next((r for r in self.records if r.ref == ref), None)

    def links_of(self, ref: str) -> list[Link]:
        return [link for link in self.links if ref in (link.source, link.target)]

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "records": [asdict(r) for r in self.records],
            "links": [asdict(link) for link in self.links],
        }


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------
def _canonical_url(url: str) -> tuple[str, str]:
    """(kind, target) of a URL."""
    if match := _GITHUB_URL.match(url):
        return "github", f"{match.group(1)}#{match.group(2)}"
    if match := _GITHUB_COMMIT_URL.match(url):
        return "commit", match.group(1)
    if match := _ISSUE_URL.match(url):
        return "key", match.group(1)
    if match := _SLACK_URL.match(url):
        return "slack", f"{match.group(1)}:{match.group(2)}.{match.group(3)}"
    return "url", url


def _cue(text: str, start: int) -> str | None:
    before = text[max(0, start - 40) : start]
    return next((name for name, pattern in _CUES if pattern.search(before)), None)


def _strings(value: Any) -> Iterable[str]:
    """Every string in a field value (plain text, a list of links, a Jira rich-text document)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _text_references(text: str, repo: str | None) -> Iterable[Reference]:
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?")
        kind, target = _canonical_url(url)
        yield Reference(target, kind, url, _cue(text, match.start()))
    # Keys and `owner/repo#N` inside URLs were read with the URL; blank the URLs out (same length).
    plain = _URL.sub(lambda m: " " * len(m.group(0)), text)
    for match in _REPO_REF.finditer(plain):
        yield Reference(f"{match.group(1)}#{match.group(2)}", "github", match.group(0), _cue(plain, match.start()))
    for match in _KEY.finditer(plain):
        yield Reference(match.group(1), "key", match.group(0), _cue(plain, match.start()))
    if repo:
        for match in _BARE_NUMBER.finditer(plain):
            yield Reference(f"{repo}#{match.group(1)}", "github", match.group(0), _cue(plain, match.start()))


def _own_targets(record: dict[str, Any]) -> set[str]:
    own = {str(record["ref"])} if record.get("ref") else set()
    own.update(_canonical_url(record[name])[1] for name in _URL_FIELDS if isinstance(record.get(name), str))
    return own


def _links(kind: CollectionSpec | None) -> bool:
    """Whether a kind's records can reference others (built-in people cannot)."""
    return kind is not None and bool(kind.link_text or kind.references)


def _declared(record: dict[str, Any], kind: CollectionSpec, kinds: Registry) -> Iterable[Reference]:
    """The references a tenant's own kind declares (`references`: field -> collection), as the target
    collection's records are known: a ref, a URL, or a tenant's own kind's key ("7" in an `incident`
    field is INC-7)."""
    for path, collection in kind.references.items():
        target_kind = kinds.get(collection)
        for value in values_at(record, path):
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                continue
            text = str(value).strip()
            if _URL.fullmatch(text):
                target = _canonical_url(text)[1]
            elif target_kind is not None and not target_kind.builtin and not text.startswith(target_kind.ref_prefix):
                target = target_kind.ref_prefix + text
            else:
                target = text
            yield Reference(target, "declared", text, None)


def references(
    record: dict[str, Any], kind: CollectionSpec | None = None, kinds: Registry | None = None
) -> list[Reference]:
    """The references a stored record's text makes (and, for a tenant's own `kind`, its declared
    reference fields: `kinds` tells its targets' kinds), one per target (the strongest cue kept), in
    order of first appearance; references to the record itself are left out."""
    repo = record.get("repo") if isinstance(record.get("repo"), str) else None
    own = _own_targets(record)
    own_kind = kind is not None and not kind.builtin
    found: dict[str, Reference] = {}
    texts = (
        ref
        for path in ((kind.link_text or ()) if own_kind else _ANY_TEXT_FIELD)
        for text in _strings(values_at(record, path))
        for ref in _text_references(text, repo)
    )
    declared = _declared(record, kind, kinds or Registry()) if own_kind else ()
    for ref in (*declared, *texts):
        if ref.target in own:
            continue
        known = found.get(ref.target)
        if known is None:
            found[ref.target] = ref
        elif _CUE_STRENGTH[ref.cue] < _CUE_STRENGTH[known.cue]:
            found[ref.target] = replace(known, cue=ref.cue)
    return list(found.values())


# --------------------------------------------------------------------------------------------
# Following links
# --------------------------------------------------------------------------------------------
def _start_target(ref: str) -> str:
    """The canonical target of a ref given to `follow_links`: a stored record's ref, or one of its URLs."""
    return _canonical_url(ref)[1] if _URL.fullmatch(ref) else ref


@dataclass
class _Node:
    """A followed record; a Slack thread is one node (the parent's ref) over its visible messages."""

    collection: str
    ref: str
    records: list[dict[str, Any]]
    kinds: Registry

    def identities(self) -> set[str]:
        """The canonical targets a reference to this record can have."""
        found: set[str] = set()
        for record in self.records:
            found |= _own_targets(record)
        return found | ({_document_key(self.collection, self.records[0])} - {None})

    def references(self) -> list[Reference]:
        kind = self.kinds.get(self.collection)
        return [ref for record in self.records for ref in references(record, kind, self.kinds)]


@dataclass
class _LinkTable:
    """Who is who and who references whom in one tenant's records (no access decisions: it only
    proposes candidates, which are then fetched through the scoped store query). In memory, built
    from a scan of the store: the table of a MongoDB deployment."""

    by_target: dict[tuple[int, str], set[tuple[str, str]]]  # (IDENTITY or REFERRER, target) -> records
    threads: dict[tuple[str, str], list[str]]  # (channel_id, thread_ts) -> message refs

    def lookup(self, kind: int, targets: Iterable[str]) -> set[tuple[str, str]]:
        return {entry for target in targets for entry in self.by_target.get((kind, target), ())}

    def thread(self, channel_id: str, thread_ts: str) -> list[str]:
        return self.threads.get((channel_id, thread_ts), [])


IDENTITY, REFERRER = 0, 1
_table_lock = threading.Lock()
_tables: dict[tuple[int, str, tuple[str, ...]], tuple[int, _LinkTable]] = {}


def _document_key(collection: str, record: dict[str, Any]) -> str | None:
    title = record.get("title")
    if collection == "documents" and isinstance(title, str) and (match := _TITLE_KEY.match(title)):
        return match.group(1)
    return None


def _entries(collection: str, record: dict[str, Any], kinds: Registry) -> Iterable[tuple[int, str]]:
    """(IDENTITY, target) for what the record is known as, (REFERRER, target) for what it references."""
    for target in _own_targets(record) | ({_document_key(collection, record)} - {None}):
        yield IDENTITY, target
    for ref in references(record, kinds.get(collection), kinds):
        yield REFERRER, ref.target


def _thread_key(record: dict[str, Any]) -> tuple[str, str]:
    return str(record.get("channel_id")), str(record.get("thread_ts") or record.get("ts"))


def _link_table(store: Any, tenant: str, kinds: Registry) -> Any:
    """The tenant's link table: on the embedded store the persisted `LinkIndex` (kept beside the
    store, brought up to date with the records written since it was), else built once per store
    revision in memory. Following links is then lookups instead of a scan of every text field per step."""
    if getattr(store, "file", None) is not None:
        try:
            return LinkIndex.synced(store).for_tenant(tenant)
        except sqlite3.Error:
            pass  # a read-only data dir (or a damaged links.sqlite) still answers, from a table in memory
    return _memory_table(store, tenant, kinds)


def thread_table(store: Any, tenant: str) -> Any:
    """The tenant's link table, whose `thread(channel_id, thread_ts)` lists the refs of a Slack
    thread's stored messages, the parent's and every reply's (candidates only: whoever asks reads
    them through the scoped store query; `hybrid.LiveAccess` checks a thread hit with it)."""
    return _link_table(store, tenant, store.kinds(tenant))


def _memory_table(store: Any, tenant: str, kinds: Registry) -> _LinkTable:
    key = (id(store), tenant, kinds.names())
    revision = getattr(store, "revision", 0)
    with _table_lock:
        cached = _tables.get(key)
        if cached and cached[0] == revision:
            return cached[1]
    table = _LinkTable({}, {})
    for collection in (kind.name for kind in kinds if _links(kind)):
        for record in store.collection(collection).find({"tenant_id": tenant}):
            entry = (collection, str(record["ref"]))
            for kind_target in _entries(collection, record, kinds):
                table.by_target.setdefault(kind_target, set()).add(entry)
            if collection == "messages":
                table.threads.setdefault(_thread_key(record), []).append(entry[1])
    with _table_lock:
        _tables[key] = (revision, table)
    return table


class LinkIndex:
    """The link table of the embedded store, persisted in `<data-dir>/links.sqlite`.

    Derived data, kept by the records' write order: the store file numbers every written row (`seq`,
    a rewritten record gets a new one), so bringing the index up to date reads only the rows written
    since the last sync, plus, when records were deleted, one indexed pass that finds them. A question
    on a store of 600k Slack messages then neither scans nor loads them: each step of a walk is an
    indexed lookup.
    Several processes may sync at once: one transaction at a time (SQLite's write lock), each
    re-reading where the last one stopped. Nothing in it decides access: it proposes candidates.
    """

    FILE_NAME = "links.sqlite"
    _FORMAT = "1"

    def __init__(self, path: Path, store_path: Path):
        self.conn = sqlite3.connect(
            path.resolve().as_uri(), uri=True, isolation_level=None, timeout=60, check_same_thread=False
        )
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("ATTACH DATABASE ? AS store", (store_path.resolve().as_uri() + "?mode=ro",))
        self.conn.executescript("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS seen (coll TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (coll, id));
            CREATE TABLE IF NOT EXISTS entries (tenant TEXT NOT NULL, kind INTEGER NOT NULL, target TEXT NOT NULL,
                                                coll TEXT NOT NULL, ref TEXT NOT NULL, id TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS entries_target ON entries (tenant, kind, target);
            CREATE INDEX IF NOT EXISTS entries_record ON entries (coll, id);
            CREATE TABLE IF NOT EXISTS threads (tenant TEXT NOT NULL, channel TEXT NOT NULL, ts TEXT NOT NULL,
                                                seq INTEGER NOT NULL, ref TEXT NOT NULL, id TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS threads_key ON threads (tenant, channel, ts);
            CREATE INDEX IF NOT EXISTS threads_record ON threads (id);
        """)
        self._lock = threading.Lock()

    _open: ClassVar[dict[str, LinkIndex]] = {}
    _open_lock = threading.Lock()

    @classmethod
    def synced(cls, store: Any) -> LinkIndex:
        """The index of `store`'s data dir (one connection per process), up to date with its file."""
        path = store.data_dir / cls.FILE_NAME
        with cls._open_lock:
            index = cls._open.get(str(path))
            if index is None:
                index = cls._open[str(path)] = cls(path, store.file.path)
        index.sync(store.file.generation(), store.kinds)
        return index

    def for_tenant(self, tenant: str) -> _TenantLinks:
        return _TenantLinks(self, tenant)

    def _meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def sync(self, generation: int, kinds_of: Callable[[str], Registry] = lambda tenant: Registry()) -> None:
        """Index the rows written since the last sync and forget deleted records. `kinds_of(tenant)`:
        the tenant's kinds (which of its collections link, and how)."""
        if self._meta("generation") == str(generation) and self._meta("format") == self._FORMAT:
            return
        with self._lock:
            cur = self.conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                # another format, or a damaged row counter (not a whole number): rebuilt from every row
                if self._meta("format") != self._FORMAT or not (self._meta("seq") or "0").isdigit():
                    for table in ("seen", "entries", "threads", "meta"):
                        cur.execute(f"DELETE FROM {table}")
                last = int(self._meta("seq") or 0)
                top = last
                registries: dict[str, Registry] = {}
                rows = self.conn.execute(
                    "SELECT seq, coll, id, body, dates FROM store.docs WHERE seq > ? ORDER BY seq", (last,)
                )
                for seq, coll, doc_id, body, dates in rows:
                    top = seq
                    self._forget(cur, coll, doc_id)
                    cur.execute("INSERT OR IGNORE INTO seen (coll, id) VALUES (?, ?)", (coll, doc_id))
                    if coll in BUILTIN and not _links(BUILTIN[coll]):
                        continue  # read no further: a built-in kind is the same for every tenant
                    try:
                        record = stored_record(doc_id, body, dates)
                    except RowDamaged:
                        continue  # a damaged row links nothing (the store skips and counts it)
                    tenant, ref = record.get("tenant_id"), str(record.get("ref"))
                    if tenant not in registries:
                        registries[tenant] = kinds_of(tenant)
                    if not _links(registries[tenant].get(coll)):
                        continue
                    cur.executemany(
                        "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                        [
                            (tenant, kind, target, coll, ref, doc_id)
                            for kind, target in dict.fromkeys(_entries(coll, record, registries[tenant]))
                        ],
                    )
                    if coll == "messages":
                        cur.execute(
                            "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?)",
                            (tenant, *_thread_key(record), seq, ref, doc_id),
                        )
                # Every stored row is in `seen` now, so equal counts mean nothing was deleted (the
                # pass that finds what was takes seconds on a million rows; the counts take none).
                counts = cur.execute("SELECT (SELECT count(*) FROM seen), (SELECT count(*) FROM store.docs)").fetchone()
                gone = (
                    []
                    if counts[0] == counts[1]
                    else cur.execute(
                        "SELECT coll, id FROM seen WHERE NOT EXISTS (SELECT 1 FROM store.docs d "
                        "WHERE d.coll = seen.coll AND d.id = seen.id)"
                    ).fetchall()
                )
                for coll, doc_id in gone:
                    self._forget(cur, coll, doc_id)
                    cur.execute("DELETE FROM seen WHERE coll = ? AND id = ?", (coll, doc_id))
                cur.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    [("seq", str(top)), ("generation", str(generation)), ("format", self._FORMAT)],
                )
                cur.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
                    self.conn.rollback()
                raise

    @staticmethod
    def _forget(cur: Any, coll: str, doc_id: str) -> None:
        cur.execute("DELETE FROM entries WHERE coll = ? AND id = ?", (coll, doc_id))
        if coll == "messages":
            cur.execute("DELETE FROM threads WHERE id = ?", (doc_id,))


@dataclass
class _TenantLinks:
    """`LinkIndex` lookups within one tenant (the same questions `_LinkTable` answers)."""

    index: LinkIndex
    tenant: str

    def lookup(self, kind: int, targets: Iterable[str]) -> set[tuple[str, str]]:
        targets = sorted(set(targets))
        found: set[tuple[str, str]] = set()
        for start in range(0, len(targets), 500):
            part = targets[start : start + 500]
            found.update(
                self.index.conn.execute(
                    f"SELECT coll, ref FROM entries WHERE tenant = ? AND kind = ? AND target IN ({', '.join('?' * len(part))})",
                    (self.tenant, kind, *part),
                )
            )
        return found

    def thread(self, channel_id: str, thread_ts: str) -> list[str]:
        return [
            ref
            for (ref,) in self.index.conn.execute(
                "SELECT ref FROM threads WHERE tenant = ? AND channel = ? AND ts = ? ORDER BY seq",
                (self.tenant, channel_id, thread_ts),
            )
        ]


class _Walk:
    def __init__(self, store: Any, tenant: str, principals: list[str], kinds: Registry):
        self.store = store
        self.scope = scope_filter(tenant, principals)
        self.kinds = kinds
        self.table = _link_table(store, tenant, kinds)

    def _fetch(self, entries: Iterable[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
        """The visible records among (collection, ref) candidates: the access filter decides here."""
        by_collection: dict[str, list[str]] = {}
        for collection, ref in entries:
            by_collection.setdefault(collection, []).append(ref)
        return [
            (collection, record)
            for collection, refs in sorted(by_collection.items())
            for record in self.store.find_refs(collection, self.scope, sorted(refs))
        ]

    def node(self, collection: str, record: dict[str, Any]) -> _Node:
        if collection != "messages":
            return _Node(collection, str(record["ref"]), [record], self.kinds)
        thread_ts = record.get("thread_ts") or record["ts"]
        refs = self.table.thread(str(record["channel_id"]), str(thread_ts))
        messages = [m for _, m in self._fetch(("messages", ref) for ref in refs)] or [record]
        messages.sort(key=lambda m: float(m["ts"]))
        parent = next((m for m in messages if m["ts"] == thread_ts), None)
        return _Node(
            "messages", str(parent["ref"]) if parent else f"{record['channel_id']}:{thread_ts}", messages, self.kinds
        )

    def resolve(self, targets: set[str]) -> dict[str, _Node]:
        """The visible records that canonical targets denote (target -> node)."""
        candidates = self.table.lookup(IDENTITY, targets)
        found: dict[str, _Node] = {}
        for collection, record in self._fetch(candidates):
            node = self.node(collection, record)
            for target in node.identities() & targets:
                found.setdefault(target, node)
        return found

    def referencing(self, nodes: list[_Node]) -> list[tuple[_Node, Reference, _Node]]:
        """(referencing node, its reference, referenced node) for visible records that reference `nodes`."""
        by_target = {target: node for node in nodes for target in node.identities()}
        candidates = self.table.lookup(REFERRER, by_target)
        found: list[tuple[_Node, Reference, _Node]] = []
        for collection, record in self._fetch(candidates):
            hits = [
                (ref, by_target[ref.target])
                for ref in references(record, self.kinds.get(collection), self.kinds)
                if ref.target in by_target
            ]
            if hits:
                source = self.node(collection, record)
                found.extend((source, ref, target) for ref, target in hits)
        return found


def _link(source: _Node, ref: Reference, target: _Node) -> Link:
    """The link a reference makes, worded by the records' kinds and the reference's cue."""
    if ref.cue == "fixes" and target.collection == "issues" and source.collection in ("pull_requests", "commits"):
        return Link(source.ref, "fixes", target.ref)
    if ref.cue == "implements":
        return Link(source.ref, "implements", target.ref)
    if ref.cue == "implemented in":
        return Link(target.ref, "implements", source.ref)
    if source.collection == "messages":
        return Link(target.ref, "discussed in", source.ref)
    if source.collection == "documents":
        return Link(target.ref, "documented in", source.ref)
    return Link(source.ref, "mentions", target.ref)


def _linked_record(node: _Node, hop: int) -> LinkedRecord:
    chunks = chunk_collection(node.collection, node.records, kind=node.kinds.get(node.collection))
    first = next((c for c in chunks if c.doc_ref == node.ref), chunks[0] if chunks else None)
    if first is None:
        return LinkedRecord(node.ref, node.collection, node.ref, None, None, "", hop)
    return LinkedRecord(
        node.ref,
        node.collection,
        first.title or node.ref,
        first.url,
        first.date.isoformat() if first.date else None,
        first.text,
        hop,
    )


def follow_links(
    store: Any,
    tenant: str,
    principals: list[str],
    refs: list[str],
    max_hops: int = 2,
    limit: int = 20,
    kinds: Registry | None = None,
) -> LinkChain:
    """The records linked to `refs` (stored refs or URLs) within `max_hops`, in both directions.

    Tenant- and ACL-scoped: a record the principals cannot read is neither a start, a step nor an
    end. At most `limit` records; within a hop, records reached by stronger relations come first.
    `kinds`: the tenant's kinds (default: as its store keeps them, `DocumentStore.kinds`).
    """
    walk = _Walk(store, tenant, principals, store.kinds(tenant) if kinds is None else kinds)
    targets = [_start_target(ref) for ref in refs]
    starts = walk.resolve(set(targets))
    ordered = list(dict.fromkeys(starts[t].ref for t in targets if t in starts))
    nodes = {node.ref: node for node in starts.values()}
    chain = LinkChain(start=ordered, records=[_linked_record(nodes[ref], 0) for ref in ordered][:limit])
    kept = {r.ref for r in chain.records}
    best: dict[frozenset[str], Link] = {}
    frontier = [nodes[ref] for ref in kept]
    for hop in range(1, max_hops + 1):
        if not frontier:
            break
        outgoing = [(node, ref) for node in frontier for ref in node.references()]
        resolved = walk.resolve({ref.target for _, ref in outgoing})
        steps = [(node, ref, resolved[ref.target]) for node, ref in outgoing if ref.target in resolved]
        steps += walk.referencing(frontier)
        found: list[tuple[Link, _Node]] = []
        for source, ref, target in steps:
            if source.ref == target.ref:
                continue
            link = _link(source, ref, target)
            pair = frozenset((source.ref, target.ref))
            if pair not in best or RELATIONS.index(link.relation) < RELATIONS.index(best[pair].relation):
                best[pair] = link
            found.extend((link, node) for node in (source, target) if node.ref not in kept)
        found.sort(key=lambda item: RELATIONS.index(item[0].relation))
        frontier = []
        for _, node in found:
            if node.ref in kept or len(kept) >= limit:
                continue
            kept.add(node.ref)
            nodes[node.ref] = node
            frontier.append(node)
            chain.records.append(_linked_record(node, hop))
    chain.links = [link for link in best.values() if link.source in kept and link.target in kept]
    return chain

"""Ingestion: normalize source records, upsert them per tenant, persist, refresh the schema cache,
sync each tenant's semantic index.

Every connector yields `{collection: [source records]}`; this module is the one place that writes.
A malformed record is skipped and counted; a failure before `commit()` leaves the previous
snapshot untouched (embedded store), so a crash half-way loses nothing. The semantic index is
synced after the commit (it is derived from the committed records); a failed sync leaves the
previous index generation live, and the next ingest catches up.

Three things happen on the way in:
- people: connectors emit person *fragments* (a GitHub login, a Slack user, a git author ...); they
  are merged with the tenant's directory (and its saved overrides) by `sources.people.merge_people`,
  and the merged directory replaces the old one;
- PRs that the git connector recovered from merge commits never overwrite a PR the GitHub data gave
  (GitHub's record is the richer one; GitHub data arriving later replaces a recovered one);
- keys: a record is stored under its `ref` within the tenant and collection. A ref belongs to the
  source that first stored it: a record of another source with the same ref (a docs page whose
  front matter `id` names another source's page, a Linear issue `ENG-1` beside Jira's) never
  replaces it, but is stored as its own record with the ref `<source>/<ref>` (`_own_refs`). A
  record that names no source (a webhook's, the sample corpus) updates whatever holds its ref, and
  GitHub's pull request replaces one recovered from git history, as before;
- `prune`: per collection and per `source` of the records read, what that source no longer has is
  removed (a full read of the source is assumed): never another source's records;
- access: a record's `acl` is what its source says (see `context_engine.access`). A source that knows
  membership replaces the stored list; one that only guesses (a webhook: `ACL_PARTIAL`) can narrow it,
  never widen it; a record whose source says nothing keeps its stored list, or gets the operator's
  declaration (`public=True`: `ingest --public`), or is readable by nobody.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from context_engine.access import PUBLIC, merge_acl
from context_engine.answering.links import LinkIndex
from context_engine.config import Settings
from context_engine.kinds import CollectionSpec
from context_engine.query.catalog import load_catalog, refresh_catalog
from context_engine.query.fulltext import sync_fulltext
from context_engine.query.values import load_values
from context_engine.retrievers.index import SyncReport, sync_index
from context_engine.sources.connectors import saved_overrides
from context_engine.sources.generic import normalize_own
from context_engine.sources.normalize import ACL_PARTIAL, RecordError, normalize
from context_engine.sources.people import merge_people
from context_engine.store.documents import DocumentStore, WriteStats, open_store
from context_engine.store.sqlite_file import StoreFileError
from context_engine.store.writer_lock import writer_lock


@dataclass
class IngestReport:
    tenant: str
    written: dict[str, WriteStats] = field(default_factory=dict)
    skipped: int = 0
    removed: dict[str, int] = field(default_factory=dict)  # --prune: records the sources no longer have
    conflicts: int = 0  # people left apart for a human to decide (`context-engine people`)
    unreadable: int = 0  # new records whose source said nothing about access: readable by nobody
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    index: SyncReport | None = None  # None when ingested with index=False

    @property
    def changed(self) -> bool:
        return bool(self.removed) or any(s.inserted or s.updated for s in self.written.values())

    @property
    def records(self) -> int:
        return sum(s.inserted + s.updated + s.unchanged for s in self.written.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "collections": {
                name: {"inserted": s.inserted, "updated": s.updated, "unchanged": s.unchanged}
                for name, s in self.written.items()
            },
            "skipped": self.skipped,
            "removed": self.removed,
            "people_conflicts": self.conflicts,
            "readable_by_nobody": self.unreadable,
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
            "index": self.index.to_json() if self.index else None,
        }


Progress = Callable[[str, int], None]


def _with_access(
    store: DocumentStore,
    tenant: str,
    name: str,
    records: list[dict[str, Any]],
    partial: set[str],
    public: bool,
    report: IngestReport,
) -> None:
    """Give every record the access list to store (in place), by the rule in the module docstring."""
    pending = [r for r in records if r.get("acl") is None or r["ref"] in partial]
    stored = {d["ref"]: d.get("acl") for d in store.find_refs(name, {"tenant_id": tenant}, [r["ref"] for r in pending])}
    for record in pending:
        existing = stored.get(record["ref"])
        if record.get("acl") is not None:  # a guess: narrows what is stored, never widens it
            record["acl"] = merge_acl(existing, record["acl"], authoritative=False)
        elif public:
            record["acl"] = [PUBLIC]
        elif existing is not None:
            record["acl"] = existing
        else:
            record["acl"] = []
            report.unreadable += 1


def write_records(
    store: DocumentStore,
    tenant: str,
    batches: Mapping[str, Iterable[dict[str, Any]]],
    report: IngestReport,
    progress: Progress | None = None,
    *,
    prune: bool = False,
    overrides: list[dict[str, Any]] | None = None,
    public: bool = False,
) -> None:
    kinds = store.kinds(tenant)
    for name, records in batches.items():
        kind = kinds.get(name)
        if kind is None:
            raise ValueError(f"unknown collection {name!r}")
        normalized, partial = [], set()
        for i, record in enumerate(records):
            try:
                guessed = isinstance(record, dict) and bool(record.get(ACL_PARTIAL))
                record = {k: v for k, v in record.items() if k != ACL_PARTIAL} if guessed else record
                normalized.append(normalize(name, record) if kind.builtin else normalize_own(record))
                if guessed:
                    partial.add(normalized[-1]["ref"])
            except (RecordError, KeyError, TypeError, ValueError) as exc:
                report.skipped += 1
                if len(report.problems) < 10:
                    report.problems.append(f"{name}[{i}]: {exc}")
        if name == "people":
            write_people(store, tenant, normalized, report, overrides)
            continue
        if name == "pull_requests":
            normalized = _without_recovered_duplicates(store, tenant, normalized)
        _own_refs(store, tenant, name, normalized)
        _with_access(store, tenant, name, normalized, partial, public, report)
        stats = store.upsert(name, tenant, normalized)
        report.written.setdefault(name, WriteStats()).add(stats)
        if prune:
            _prune(store, tenant, name, normalized, report)
        if progress:
            progress(name, len(normalized))


def write_people(
    store: DocumentStore,
    tenant: str,
    fragments: list[dict[str, Any]],
    report: IngestReport,
    overrides: list[dict[str, Any]] | None,
) -> None:
    """Merge the fragments into the tenant's directory; the merged directory replaces the old one."""
    if not fragments and not overrides:
        return
    existing = list(store.collection("people").find({"tenant_id": tenant}, {"_id": 0, "tenant_id": 0}))
    directory = merge_people(existing + fragments, overrides)
    # The directory (names, logins, teams) is what every member of the tenant resolves names against.
    people = [{**normalize("people", person), "acl": [PUBLIC]} for person in directory.people]
    stats = store.upsert("people", tenant, people)
    report.written.setdefault("people", WriteStats()).add(stats)
    absorbed = store.delete_missing("people", tenant, {p["ref"] for p in people}, {})
    if absorbed:
        report.removed["people"] = report.removed.get("people", 0) + absorbed
    report.conflicts = len(directory.conflicts)


def _without_recovered_duplicates(store: DocumentStore, tenant: str, prs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    recovered = [pr["ref"] for pr in prs if pr.get("recovered_from")]
    if not recovered:
        return prs
    from_github = {
        d["ref"]
        for d in store.find_refs("pull_requests", {"tenant_id": tenant}, recovered)
        if not d.get("recovered_from")
    }
    return [pr for pr in prs if not (pr.get("recovered_from") and pr["ref"] in from_github)]


def _may_replace(holder: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether `record` may replace `holder`, the record stored (or written earlier in this batch)
    under the same ref: the same source, or a holder that names none, or GitHub's pull request over
    one recovered from git history."""
    return holder.get("source") in (None, record["source"]) or (
        bool(holder.get("recovered_from")) and not record.get("recovered_from")
    )


def _own_refs(store: DocumentStore, tenant: str, name: str, records: list[dict[str, Any]]) -> None:
    """Give each record (in place) the ref it is stored under, so that no source replaces another's
    record (module docstring). A record that was stored as `<source>/<ref>` stays there."""
    sourced = [r for r in records if r.get("source") is not None]
    if not sourced:
        return
    stored = store.stored_refs(name, tenant, [r["ref"] for r in sourced])
    # Only a record whose ref is free or held by another source may have been stored apart before
    # (a source that holds a ref never gets a second key for it): re-ingests look up one key each.
    maybe_apart = [
        f"{r['source']}/{r['ref']}"
        for r in sourced
        if (held := stored.get(r["ref"])) is None or held.get("source", r["source"]) != r["source"]
    ]
    apart = set(store.stored_refs(name, tenant, maybe_apart))
    holders: dict[str, dict[str, Any]] = {}  # ref -> the record holding it: stored, or earlier in this batch
    for record in sourced:
        ref, own = record["ref"], f"{record['source']}/{record['ref']}"
        holder = holders.get(ref) or stored.get(ref)
        if own in apart or (holder is not None and not _may_replace(holder, record)):
            record["ref"] = own
        else:
            holders[ref] = record


def _prune(store: DocumentStore, tenant: str, name: str, records: list[dict[str, Any]], report: IngestReport) -> None:
    sources = {r.get("source") for r in records}
    if None in sources:
        raise ValueError(f"--prune: {name} records without a `source` cannot be pruned")
    keep = {r["ref"] for r in records}
    removed = sum(store.delete_missing(name, tenant, keep, {"source": source}) for source in sources)
    if removed:
        report.removed[name] = report.removed.get(name, 0) + removed


def ingest(
    settings: Settings,
    per_tenant: Mapping[str, Mapping[str, Iterable[dict[str, Any]]]],
    progress: Progress | None = None,
    index: bool = True,
    prune: bool = False,
    public: bool = False,
    on_wait: Callable[[str], None] | None = None,
    kinds: dict[str, list[CollectionSpec]] | None = None,
) -> list[IngestReport]:
    """Write every tenant's batches, then persist once, refresh the catalogs and (unless `index` is
    False) sync each tenant's semantic index. `progress(label, count)` hears record and chunk counts.
    `prune`: remove what each source read no longer has. `public`: the operator declares that records
    whose source says nothing about access are readable by the whole tenant. `kinds`: per tenant, its
    own collections' specs (`ingest json|mongodb`), stored (replacing an earlier spec of the same name)
    in the same commit as the records."""
    started = time.perf_counter()
    # The store is opened under the lock, so this writer starts from the last one's commit.
    with writer_lock(settings.data_dir, on_wait=on_wait):
        store = open_store(settings)
        store.ensure_indexes()
        reports = []
        for tenant, batches in per_tenant.items():
            report = IngestReport(tenant)
            for spec in (kinds or {}).get(tenant, ()):
                store.save_kind(tenant, spec)
            write_records(
                store,
                tenant,
                batches,
                report,
                progress,
                prune=prune,
                overrides=saved_overrides(settings.data_dir, tenant),
                public=public,
            )
            reports.append(report)
        store.commit()  # only what changed; nothing changed, nothing written (a failure: StoreFileError)
        if store.file is not None:
            try:
                LinkIndex.synced(store)  # the records written now are linked here, not by the first question
            except sqlite3.Error as exc:  # a full disk after the commit: questions link from memory meanwhile
                raise StoreFileError(
                    f"the records are committed (store generation {store.generation}), but the "
                    f"link index beside them could not be updated: {exc}"
                ) from None
        for report in reports:
            if report.changed:
                catalog = refresh_catalog(store, settings, report.tenant)
            else:
                catalog = load_catalog(store, settings, report.tenant)  # rebuilt if it does not match the store
            load_values(store, settings, catalog)  # the value index of this commit (rebuilt if stale)
            try:  # `$text` reads an index built here, not one each new process tokenizes the collection for
                sync_fulltext(store, report.tenant, catalog.schemas)
            except OSError as exc:  # a full disk after the commit: `$text` fits its index in memory meanwhile
                raise StoreFileError(
                    f"the records are committed (store generation {store.generation}), but the "
                    f"full-text index beside them could not be updated: {exc}"
                ) from None
            if index:
                report.index = sync_index(store, report.tenant, settings, progress)
            report.seconds = time.perf_counter() - started
    return reports


def sync_tenant_index(settings: Settings, tenant: str) -> SyncReport:
    """Bring one tenant's semantic index up to the store's last commit (what a server does in the
    background after a webhook's records are committed)."""
    with writer_lock(settings.data_dir):
        return sync_index(open_store(settings), tenant, settings)

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
- `prune`: per collection and per `source` of the records read, what that source no longer has is
  removed (a full read of the source is assumed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from context_engine.config import COLLECTIONS, Settings
from context_engine.query.catalog import catalog_cached, refresh_catalog
from context_engine.retrievers.index import SyncReport, sync_index
from context_engine.sources.connectors import saved_overrides
from context_engine.sources.normalize import RecordError, normalize
from context_engine.sources.people import merge_people
from context_engine.store.documents import DocumentStore, WriteStats, open_store


@dataclass
class IngestReport:
    tenant: str
    written: dict[str, WriteStats] = field(default_factory=dict)
    skipped: int = 0
    removed: dict[str, int] = field(default_factory=dict)  # --prune: records the sources no longer have
    conflicts: int = 0  # people left apart for a human to decide (`context-engine people`)
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
            "collections": {name: {"inserted": s.inserted, "updated": s.updated, "unchanged": s.unchanged}
                            for name, s in self.written.items()},
            "skipped": self.skipped,
            "removed": self.removed,
            "people_conflicts": self.conflicts,
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
            "index": self.index.to_json() if self.index else None,
        }


Progress = Callable[[str, int], None]


def write_records(store: DocumentStore, tenant: str, batches: dict[str, Iterable[dict[str, Any]]],
                  report: IngestReport, progress: Progress | None = None, *, prune: bool = False,
                  overrides: list[dict[str, Any]] | None = None) -> None:
    for name, records in batches.items():
        if name not in COLLECTIONS:
            raise ValueError(f"unknown collection {name!r}")
        normalized = []
        for i, record in enumerate(records):
            try:
                normalized.append(normalize(name, record))
            except (RecordError, KeyError, TypeError, ValueError) as exc:
                report.skipped += 1
                if len(report.problems) < 10:
                    report.problems.append(f"{name}[{i}]: {exc}")
        if name == "people":
            write_people(store, tenant, normalized, report, overrides)
            continue
        if name == "pull_requests":
            normalized = _without_recovered_duplicates(store, tenant, normalized)
        stats = store.upsert(name, tenant, normalized)
        report.written.setdefault(name, WriteStats()).add(stats)
        if prune:
            _prune(store, tenant, name, normalized, report)
        if progress:
            progress(name, len(normalized))


def write_people(store: DocumentStore, tenant: str, fragments: list[dict[str, Any]], report: IngestReport,
                 overrides: list[dict[str, Any]] | None) -> None:
    """Merge the fragments into the tenant's directory; the merged directory replaces the old one."""
    if not fragments and not overrides:
        return
    existing = list(store.collection("people").find({"tenant_id": tenant}, {"_id": 0, "tenant_id": 0}))
    directory = merge_people(existing + fragments, overrides)
    people = [normalize("people", person) for person in directory.people]
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
    from_github = {d["ref"] for d in store.find_refs("pull_requests", {"tenant_id": tenant}, recovered)
                   if not d.get("recovered_from")}
    return [pr for pr in prs if not (pr.get("recovered_from") and pr["ref"] in from_github)]


def _prune(store: DocumentStore, tenant: str, name: str, records: list[dict[str, Any]], report: IngestReport) -> None:
    sources = {r.get("source") for r in records}
    if None in sources:
        raise ValueError(f"--prune: {name} records without a `source` cannot be pruned")
    keep = {r["ref"] for r in records}
    removed = sum(store.delete_missing(name, tenant, keep, {"source": source}) for source in sources)
    if removed:
        report.removed[name] = report.removed.get(name, 0) + removed


def ingest(settings: Settings, per_tenant: dict[str, dict[str, Iterable[dict[str, Any]]]],
           progress: Progress | None = None, index: bool = True, prune: bool = False) -> list[IngestReport]:
    """Write every tenant's batches, then persist once, refresh the catalogs and (unless `index` is
    False) sync each tenant's semantic index. `progress(label, count)` hears record and chunk counts.
    `prune`: remove what each source read no longer has."""
    started = time.perf_counter()
    store = open_store(settings)
    store.ensure_indexes()
    reports = []
    for tenant, batches in per_tenant.items():
        report = IngestReport(tenant)
        write_records(store, tenant, batches, report, progress, prune=prune,
                      overrides=saved_overrides(settings.data_dir, tenant))
        reports.append(report)
    if store.revision:  # nothing new, updated or removed: the current snapshot stands
        store.commit()
    for report in reports:
        if report.changed or not catalog_cached(settings, report.tenant):
            refresh_catalog(store, settings, report.tenant)
        if index:
            report.index = sync_index(store, report.tenant, settings, progress)
        report.seconds = time.perf_counter() - started
    return reports

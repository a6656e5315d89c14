"""Ingestion: normalize source records, upsert them per tenant, persist, refresh the schema cache,
sync each tenant's semantic index.

Every connector yields `{collection: [source records]}`; this module is the one place that writes.
A malformed record is skipped and counted; a failure before `commit()` leaves the previous
snapshot untouched (embedded store), so a crash half-way loses nothing. The semantic index is
synced after the commit (it is derived from the committed records); a failed sync leaves the
previous index generation live, and the next ingest catches up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from context_engine.config import COLLECTIONS, Settings
from context_engine.query.catalog import refresh_catalog
from context_engine.retrievers.index import SyncReport, sync_index
from context_engine.sources.normalize import RecordError, normalize
from context_engine.store.documents import DocumentStore, WriteStats, open_store


@dataclass
class IngestReport:
    tenant: str
    written: dict[str, WriteStats] = field(default_factory=dict)
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    index: SyncReport | None = None  # None when ingested with index=False

    @property
    def records(self) -> int:
        return sum(s.inserted + s.updated + s.unchanged for s in self.written.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "collections": {name: {"inserted": s.inserted, "updated": s.updated, "unchanged": s.unchanged}
                            for name, s in self.written.items()},
            "skipped": self.skipped,
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
            "index": self.index.to_json() if self.index else None,
        }


Progress = Callable[[str, int], None]


def write_records(store: DocumentStore, tenant: str, batches: dict[str, Iterable[dict[str, Any]]],
                  report: IngestReport, progress: Progress | None = None) -> None:
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
        stats = store.upsert(name, tenant, normalized)
        report.written.setdefault(name, WriteStats()).add(stats)
        if progress:
            progress(name, len(normalized))


def ingest(settings: Settings, per_tenant: dict[str, dict[str, Iterable[dict[str, Any]]]],
           progress: Progress | None = None, index: bool = True) -> list[IngestReport]:
    """Write every tenant's batches, then persist once, refresh the catalogs and (unless `index` is
    False) sync each tenant's semantic index. `progress(label, count)` hears record and chunk counts."""
    started = time.perf_counter()
    store = open_store(settings)
    store.ensure_indexes()
    reports = []
    for tenant, batches in per_tenant.items():
        report = IngestReport(tenant)
        write_records(store, tenant, batches, report, progress)
        reports.append(report)
    store.commit()
    for report in reports:
        refresh_catalog(store, settings, report.tenant)
        if index:
            report.index = sync_index(store, report.tenant, settings, progress)
        report.seconds = time.perf_counter() - started
    return reports

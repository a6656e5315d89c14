"""Process-wide resources: the store, catalogs and models, opened once per configuration.

Nodes and the CLI get them here, so a warm `graph.invoke` pays for none of them again.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

from context_engine.config import Settings
from context_engine.models import chat_model
from context_engine.query.catalog import Catalog, load_catalog
from context_engine.query.identity import Person
from context_engine.store.documents import DocumentStore, StoreError, has_data, open_store

_lock = threading.Lock()
_stores: dict[tuple[str, str | None], DocumentStore] = {}
_catalogs: dict[tuple[int, str], Catalog] = {}
_planners: dict[tuple[str, str | None, str], Any] = {}


class NoData(StoreError):
    pass


def store_for(settings: Settings) -> DocumentStore:
    key = (str(settings.data_dir.resolve()), settings.mongodb_uri)
    with _lock:
        if key not in _stores:
            if not has_data(settings):
                raise NoData(f"no data in {settings.data_dir}: run `context-engine ingest sample` first")
            _stores[key] = open_store(settings)
        return _stores[key]


def catalog_for(settings: Settings) -> Catalog:
    store = store_for(settings)
    key = (id(store), settings.tenant)
    with _lock:
        if key not in _catalogs:
            _catalogs[key] = load_catalog(store, settings, settings.tenant)
        return _catalogs[key]


def forget(settings: Settings) -> None:
    """Drop cached resources after an ingest, so the next question sees the new data."""
    key = (str(settings.data_dir.resolve()), settings.mongodb_uri)
    with _lock:
        store = _stores.pop(key, None)
        if store is not None:
            for k in [k for k in _catalogs if k[0] == id(store)]:
                del _catalogs[k]


def asker_for(settings: Settings, catalog: Catalog) -> Person | None:
    if not settings.asker:
        return None
    return catalog.directory.lookup(settings.asker)


def llm_planner_for(settings: Settings):
    if not settings.llm_configured:
        return None
    from context_engine.query.llm_planner import LLMPlanner

    key = (settings.model, settings.openai_base_url, str(settings.max_rows))
    with _lock:
        if key not in _planners:
            _planners[key] = LLMPlanner(chat_model(settings), max_rows=settings.max_rows)
        return _planners[key]


def parse_now(value: str | datetime | None) -> datetime:
    """`now` as naive UTC; an ISO string with or without zone, or the clock when absent."""
    if value is None or value == "":
        return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"malformed time {value!r}: use ISO 8601, e.g. 2026-11-30T12:00:00Z") from None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt

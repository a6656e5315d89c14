"""Process-wide resources: the store, catalogs, semantic indexes and models, opened once per configuration.

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
from context_engine.retrievers.dense import DenseEmbeddings, make_embeddings
from context_engine.retrievers.index import SemanticIndex, live_generation
from context_engine.store.documents import DocumentStore, StoreError, has_data, open_store

_lock = threading.Lock()
_stores: dict[tuple[str, str | None], DocumentStore] = {}
_catalogs: dict[tuple[int, str, tuple[str, ...]], Catalog] = {}
_planners: dict[tuple[str, str | None, str], Any] = {}
_indexes: dict[tuple[str, str], SemanticIndex] = {}
_query_embeddings: dict[str, DenseEmbeddings] = {}  # one loaded model per name, shared by tenants


class NoData(StoreError):
    pass


def store_for(settings: Settings) -> DocumentStore:
    """The store, reloaded (with everything derived from it) when another process committed to it:
    a running server sees what a CLI ingest wrote without a restart."""
    key = (str(settings.data_dir.resolve()), settings.mongodb_uri)
    store = _stores.get(key)
    if store is not None and store.stale():
        forget(settings)
    with _lock:
        if key not in _stores:
            if not has_data(settings):
                raise NoData(f"no data in {settings.data_dir}: run `context-engine ingest sample` first")
            _stores[key] = open_store(settings)
        return _stores[key]


def _catalog(settings: Settings, principals: tuple[str, ...]) -> Catalog:
    store = store_for(settings)
    key = (id(store), settings.tenant, principals)
    with _lock:
        if key not in _catalogs:
            _catalogs[key] = load_catalog(store, settings, settings.tenant, principals)
        return _catalogs[key]


def catalog_for(settings: Settings) -> Catalog:
    """The run tenant's catalog as the run's asker may see it: schemas (fields, enumerations,
    examples) come only from records the asker can read; no asker sees public records only."""
    return _catalog(settings, tuple(principals_for(settings)))


def semantic_index_for(settings: Settings) -> SemanticIndex:
    """The run tenant's semantic index, loaded once per (data dir, tenant); raises
    `retrievers.index.IndexMissing` when the tenant was never indexed."""
    key = (str(settings.data_dir.resolve()), settings.tenant)
    with _lock:
        held = _indexes.get(key)
        if held is not None and held.generation != live_generation(settings, settings.tenant):
            del _indexes[key]  # another process synced a newer generation
        if key not in _indexes:
            name = settings.embedding_model
            if name not in _query_embeddings:
                _query_embeddings[name] = make_embeddings(name)
            _indexes[key] = SemanticIndex.load(settings, settings.tenant, embeddings=_query_embeddings[name])
        return _indexes[key]


def forget(settings: Settings) -> None:
    """Drop cached resources after an ingest, so the next question sees the new data."""
    data_dir = str(settings.data_dir.resolve())
    key = (data_dir, settings.mongodb_uri)
    with _lock:
        store = _stores.pop(key, None)
        if store is not None:
            for k in [k for k in _catalogs if k[0] == id(store)]:
                del _catalogs[k]
        for k in [k for k in _indexes if k[0] == data_dir]:
            del _indexes[k]


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


_chat_models: dict[tuple[str, str | None], Any] = {}


def chat_model_for(settings: Settings):
    """The configured chat model for answering nodes (route, rerank, compress, generate, reflect), or
    None in offline mode."""
    if not settings.llm_configured:
        return None
    key = (settings.model, settings.openai_base_url)
    with _lock:
        if key not in _chat_models:
            _chat_models[key] = chat_model(settings)
        return _chat_models[key]


def principals_for(settings: Settings) -> list[str]:
    """The access-list entries the run's asker holds (empty: only public records)."""
    from context_engine.query.engine import principals_of

    # The directory is the tenant's, whoever asks: resolve the asker on the public view.
    return sorted(set(principals_of(asker_for(settings, _catalog(settings, ())))))

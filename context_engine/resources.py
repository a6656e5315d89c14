"""Process-wide resources: the store, catalogs, semantic indexes and models, opened once per configuration.

Nodes and the CLI get them here, so a warm `graph.invoke` pays for none of them again.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from context_engine.chat_models import chat_model
from context_engine.config import Settings
from context_engine.query.catalog import Catalog, load_catalog
from context_engine.query.identity import Person
from context_engine.query.values import ValueData, ValueIndex, load_values
from context_engine.retrievers.dense import DenseEmbeddings, make_embeddings
from context_engine.retrievers.index import SemanticIndex, live_generation
from context_engine.store.documents import DocumentStore, StoreError, has_data, open_store

_lock = threading.Lock()
_stores: dict[tuple[str, str | None], DocumentStore] = {}
_catalogs: dict[tuple[int, str, tuple[str, ...]], Catalog] = {}
_planners: dict[tuple[Any, ...], Any] = {}
_indexes: dict[tuple[str, str], SemanticIndex] = {}
_query_embeddings: dict[str, DenseEmbeddings] = {}  # one loaded model per name, shared by tenants
_values: dict[tuple[int, str], ValueData] = {}


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


_followed: dict[tuple[str, str], float] = {}  # (data dir, tenant) -> when the shared revision was last read


def follow_shared_index(settings: Settings) -> None:
    """On MongoDB, several replicas share the records and vectors: when the tenant's shared index
    revision names other chunks than this replica's local generation, rebuild the local one from the
    store (vectors come from the shared collection: nothing is embedded again). Read at most once per
    `SHARED_POLL_SECONDS`, so a webhook written through any replica is answered by all within seconds."""
    if not settings.mongodb_uri:
        return
    from context_engine.retrievers.index import live_fingerprint, sync_index
    from context_engine.store.documents import SHARED_POLL_SECONDS
    from context_engine.store.writer_lock import writer_lock

    key = (str(settings.data_dir.resolve()), settings.tenant)
    now = time.monotonic()
    if now - _followed.get(key, -SHARED_POLL_SECONDS) < SHARED_POLL_SECONDS:
        return
    _followed[key] = now
    store = store_for(settings)
    shared = store.engine_collection("index_revisions").find_one({"_id": settings.tenant})
    if shared is None or shared.get("fingerprint") == live_fingerprint(settings, settings.tenant):
        return
    with writer_lock(settings.data_dir):  # the local cache has one writer too
        if shared.get("fingerprint") != live_fingerprint(settings, settings.tenant):
            sync_index(store, settings.tenant, settings)


def semantic_index_for(settings: Settings) -> SemanticIndex:
    """The run tenant's semantic index, loaded once per (data dir, tenant); raises
    `retrievers.index.IndexMissing` when the tenant was never indexed. On MongoDB, first brought up to
    the shared revision (`follow_shared_index`)."""
    follow_shared_index(settings)
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


def value_index_for(settings: Settings) -> ValueIndex:
    """The run tenant's value index as the run's asker sees it (`query.values`): loaded once per
    store and tenant, rebuilt when the store moved past the generation it was built from."""
    store = store_for(settings)
    key = (id(store), settings.tenant)
    with _lock:
        data = _values.get(key)
    if data is None or data.generation != store.generation:
        data = load_values(store, settings, _catalog(settings, ()))
        with _lock:
            _values[key] = data
    return ValueIndex(data, store, settings.tenant, principals_for(settings))


def forget(settings: Settings) -> None:
    """Drop cached resources after an ingest, so the next question sees the new data."""
    data_dir = str(settings.data_dir.resolve())
    key = (data_dir, settings.mongodb_uri)
    with _lock:
        store = _stores.pop(key, None)
        if store is not None:
            for catalog_key in [k for k in _catalogs if k[0] == id(store)]:
                del _catalogs[catalog_key]
            for values_key in [k for k in _values if k[0] == id(store)]:
                del _values[values_key]
        for index_key in [k for k in _indexes if k[0] == data_dir]:
            del _indexes[index_key]


def asker_for(settings: Settings, catalog: Catalog) -> Person | None:
    """The run's asker: the directory person whose ONE account group `settings.asker` names exactly
    (never fuzzily). Raises `query.identity.UnknownAsker` / `AmbiguousAsker`."""
    if not settings.asker:
        return None
    return catalog.directory.asker(settings.asker)


def llm_planner_for(settings: Settings):
    """The LLM planner over the run's planner model, or None offline."""
    llm = chat_model_for(settings, "planner")
    if llm is None:
        return None
    from context_engine.query.llm_planner import LLMPlanner

    if not isinstance(settings.chat_model_spec("planner"), str):  # the run's own model: no cache to outlive it
        return LLMPlanner(llm, max_rows=settings.max_rows)
    key = (_model_key(settings, "planner"), str(settings.max_rows))
    with _lock:
        if key not in _planners:
            _planners[key] = LLMPlanner(llm, max_rows=settings.max_rows)
        return _planners[key]


_chat_models: dict[tuple[Any, ...], Any] = {}


def _model_key(settings: Settings, role: str) -> tuple[Any, ...]:
    return (settings.chat_model_spec(role), settings.model, settings.openai_base_url)


def chat_model_for(settings: Settings, role: str = ""):
    """The chat model for a role (`config.CHAT_ROLES`), made once per configuration, or None offline."""
    if not settings.llm_configured:
        return None
    if not isinstance(settings.chat_model_spec(role), str):
        return chat_model(settings, role)  # the run's own instance
    key = _model_key(settings, role)
    with _lock:
        if key not in _chat_models:
            _chat_models[key] = chat_model(settings, role)
        return _chat_models[key]


def principals_for(settings: Settings) -> list[str]:
    """The access-list entries the run's asker holds (empty: only public records)."""
    from context_engine.query.engine import principals_of

    # The directory is the tenant's, whoever asks: resolve the asker on the public view.
    return sorted(set(principals_of(asker_for(settings, _catalog(settings, ())))))

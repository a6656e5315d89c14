"""The per-tenant catalog: discovered schemas and the people directory, cached on disk.

Discovery runs on ingest (and on first use when no cache exists), so answering a question never
samples the database. The cache lives in the data directory as one JSON file per tenant.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from context_engine.config import Settings, check_tenant
from context_engine.query.execute import scope_filter
from context_engine.query.identity import PeopleDirectory, places_of
from context_engine.query.schema import CollectionSchema, discover
from context_engine.store.documents import DocumentStore, strip_hidden
from context_engine.store.regular_files import read_regular_text

CATALOG_FORMAT = 3  # bumped whenever what a cached catalog means changes (3: stamped with the store generation)
PEOPLE_FIELDS = ("login", "name", "email", "slack_id", "slack_handle", "jira", "team", "aliases", "accounts")


@dataclass
class Catalog:
    tenant: str
    schemas: dict[str, CollectionSchema]
    people: list[dict[str, Any]]
    principals: list[str] = field(default_factory=list)  # the access set the schemas were discovered for
    generation: int = 0  # the store generation it was discovered from

    @cached_property
    def directory(self) -> PeopleDirectory:
        """Built once per catalog: every question of the tenant resolves names against it."""
        return PeopleDirectory(self.people)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CATALOG_FORMAT,
            "tenant": self.tenant,
            "principals": self.principals,
            "generation": self.generation,
            "schemas": {n: s.to_json() for n, s in self.schemas.items()},
            "people": self.people,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Catalog:
        return cls(
            tenant=data["tenant"],
            schemas={n: CollectionSchema.from_json(s) for n, s in data["schemas"].items()},
            people=data["people"],
            principals=data.get("principals", []),
            generation=data.get("generation", 0),
        )


def _cache_path(settings: Settings, tenant: str, principals: Sequence[str] = ()) -> Path:
    """The tenant's own file for the public view; one file per access set under `<tenant>/` otherwise.

    The tenant is used as-is after `check_tenant` (no lossy mapping: two tenants never share a file,
    a name never escapes the data dir); an access set is named by a hash of its sorted principals.
    """
    root = settings.data_dir / "catalog"
    if not principals:
        return root / f"{check_tenant(tenant)}.json"
    digest = hashlib.sha256("\n".join(sorted(set(principals))).encode()).hexdigest()[:32]
    return root / check_tenant(tenant) / f"{digest}.json"


def build_catalog(store: DocumentStore, tenant: str, principals: Sequence[str] = ()) -> Catalog:
    """Schemas discovered only from what `principals` may read (a private channel's name or text
    never reaches a planner prompt or `schema` output of someone outside it); the people directory
    is the tenant's. Every kind of the tenant's registry is discovered, its own ones (`ingest json`,
    `ingest mongodb`) with their spec (`CollectionSchema.own_kind`); a spec is committed with the
    records, so the store generation the cache is stamped with changes whenever a spec does."""
    scope = scope_filter(tenant, list(principals))
    schemas = {}
    for kind in store.kinds(tenant):
        records = store.scoped(kind.name, scope)
        if records.count():
            schemas[kind.name] = discover(records, own_kind=None if kind.builtin else kind)
    people = [
        {
            **{k: p[k] for k in PEOPLE_FIELDS if p.get(k) is not None},
            **({"places": places} if (places := places_of(p)) else {}),
        }
        for p in map(strip_hidden, store.collection("people").find({"tenant_id": tenant}))
    ]
    return Catalog(tenant, schemas, people, sorted(set(principals)), store.generation)


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(catalog.to_json(), ensure_ascii=False, default=str))
    os.replace(tmp, path)


def refresh_catalog(store: DocumentStore, settings: Settings, tenant: str) -> Catalog:
    """Rebuild the public view after a write; the per-access-set views are dropped (rebuilt on use)."""
    catalog = build_catalog(store, tenant)
    _write(_cache_path(settings, tenant), catalog)
    shutil.rmtree(settings.data_dir / "catalog" / tenant, ignore_errors=True)
    return catalog


def load_catalog(store: DocumentStore, settings: Settings, tenant: str, principals: Sequence[str] = ()) -> Catalog:
    """The cached catalog of `tenant` as seen by `principals`, built when absent, damaged, made for
    another tenant or access set, or from another store generation (after a crash between the
    store's commit and the catalog's refresh, the next use repairs it)."""
    path = _cache_path(settings, tenant, principals)
    wanted = sorted(set(principals))
    try:
        data = json.loads(read_regular_text(path))
        if (data.get("format"), data["tenant"], data["principals"], data["generation"]) == (
            CATALOG_FORMAT,
            tenant,
            wanted,
            store.generation,
        ):
            return Catalog.from_json(data)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError):
        pass  # a damaged or unreadable cache is rebuilt below
    catalog = build_catalog(store, tenant, principals)
    with contextlib.suppress(OSError):  # a read-only data dir still answers, from the catalog built in memory
        _write(path, catalog)
    return catalog

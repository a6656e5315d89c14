"""The per-tenant catalog: discovered schemas and the people directory, cached on disk.

Discovery runs on ingest (and on first use when no cache exists), so answering a question never
samples the database. The cache lives in the data directory as one JSON file per tenant.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from context_engine.config import COLLECTIONS, Settings
from context_engine.query.identity import PeopleDirectory
from context_engine.query.schema import CollectionSchema, discover
from context_engine.store.documents import DocumentStore, strip_hidden

PEOPLE_FIELDS = ("login", "name", "email", "slack_id", "slack_handle", "jira", "team", "aliases")


@dataclass
class Catalog:
    tenant: str
    schemas: dict[str, CollectionSchema]
    people: list[dict[str, Any]]

    @cached_property
    def directory(self) -> PeopleDirectory:
        """Built once per catalog: every question of the tenant resolves names against it."""
        return PeopleDirectory(self.people)

    def to_json(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "schemas": {n: s.to_json() for n, s in self.schemas.items()},
                "people": self.people}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Catalog":
        return cls(tenant=data["tenant"],
                   schemas={n: CollectionSchema.from_json(s) for n, s in data["schemas"].items()},
                   people=data["people"])


def _cache_path(settings: Settings, tenant: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", tenant)
    return settings.data_dir / "catalog" / f"{safe}.json"


def build_catalog(store: DocumentStore, tenant: str) -> Catalog:
    schemas = {}
    for name in COLLECTIONS:
        coll = store.collection(name)
        if coll.count_documents({"tenant_id": tenant}, limit=1):
            schemas[name] = discover(coll, tenant)
    people = [{k: p[k] for k in PEOPLE_FIELDS if p.get(k) is not None}
              for p in map(strip_hidden, store.collection("people").find({"tenant_id": tenant}))]
    return Catalog(tenant, schemas, people)


def catalog_cached(settings: Settings, tenant: str) -> bool:
    return _cache_path(settings, tenant).exists()


def refresh_catalog(store: DocumentStore, settings: Settings, tenant: str) -> Catalog:
    catalog = build_catalog(store, tenant)
    path = _cache_path(settings, tenant)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(catalog.to_json(), ensure_ascii=False, default=str))
    os.replace(tmp, path)
    return catalog


def load_catalog(store: DocumentStore, settings: Settings, tenant: str) -> Catalog:
    path = _cache_path(settings, tenant)
    if path.exists():
        try:
            return Catalog.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError):
            pass  # a damaged cache is rebuilt below
    return refresh_catalog(store, settings, tenant)

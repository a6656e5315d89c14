"""`$text` for stores without a usable text index: served from the engine's own BM25 index.

The embedded store has no `$text`, and MongoDB's `$text` does not segment Chinese; so a `$text`
clause is answered by BM25 over the collection's text fields and becomes an `_id` pre-filter.
Indexes are built per tenant and collection on first use and kept for the life of the process.
"""

from __future__ import annotations

from typing import Any

from context_engine.query.schema import values_at
from context_engine.retrievers.bm25 import BM25Index

# (store, collection, tenant) -> (store revision it was built at, index): one index each, replaced
# when the store has been written since, so a long-lived server does not keep every old one.
_CACHE: dict[tuple[int, str, str], tuple[int, BM25Index]] = {}


def _text_of(doc: dict[str, Any], fields: list[str]) -> str:
    return "\n".join(v for path in fields for v in values_at(doc, path) if isinstance(v, str))


def text_index(collection: Any, tenant: str, fields: list[str], revision: int) -> BM25Index:
    """`revision` changes whenever the store is written, so an edited record is searched as edited."""
    key = (id(collection.database), collection.name, tenant)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == revision:
        return cached[1]
    docs = list(collection.find({"tenant_id": tenant}, {f: 1 for f in fields}))
    index = BM25Index().fit([d["_id"] for d in docs], (_text_of(d, fields) for d in docs))
    _CACHE[key] = (revision, index)
    return index


def text_ids(collection: Any, tenant: str, fields: list[str], search: str, revision: int) -> list[Any]:
    return [doc_id for doc_id, _ in text_index(collection, tenant, fields, revision).search(search)]

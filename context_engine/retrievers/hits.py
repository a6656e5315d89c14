"""Hits as plain dicts: the form in which retrieved items travel through the graph state and out.

A hit is a LangChain `Document` inside the retrievers; between graph nodes it is a JSON-able dict
with the text under "text" and the metadata flattened beside it (dates as ISO strings).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.documents import Document

__all__ = ["hit_to_dict", "hit_to_document"]


def hit_to_dict(doc: Document) -> dict[str, Any]:
    hit = {key: (value.isoformat() if isinstance(value, datetime) else value) for key, value in doc.metadata.items()}
    hit["id"] = doc.id or hit.get("chunk_id")
    hit["text"] = doc.page_content
    return hit


def hit_to_document(hit: dict[str, Any]) -> Document:
    metadata = {key: value for key, value in hit.items() if key not in ("id", "text")}
    return Document(page_content=hit.get("text", ""), id=hit.get("id"), metadata=metadata)


def rows_to_hits(rows: list[dict[str, Any]], collection: str, tenant: str) -> list[dict[str, Any]]:
    """Structured result rows that are records (they have a `ref`) as hits, in query order.

    Aggregation rows (counts, groups) are not records and have no text to cite: they stay out.
    """
    from context_engine.query.answer import citation
    from context_engine.retrievers.chunking import chunk_record

    hits = []
    for rank, row in enumerate((r for r in rows if r.get("ref")), start=1):
        cite = citation(row, collection)
        try:
            chunks = chunk_record(collection, row, tenant=tenant)
        except (KeyError, TypeError, ValueError):
            chunks = []
        text = chunks[0].text if chunks else cite["title"] or ""
        hits.append(
            {
                "id": f"structured:{row['ref']}",
                "doc_ref": str(row["ref"]),
                "collection": collection,
                "title": cite["title"],
                "url": cite["url"],
                "author": chunks[0].author if chunks else None,
                "date": chunks[0].date.isoformat() if chunks and chunks[0].date else None,
                "score": 1.0 / rank,
                "retriever": "structured",
                "text": text,
            }
        )
    return hits

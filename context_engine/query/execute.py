"""Execution: scope a validated pipeline to the tenant and the asker's access, bound it, run it.

Scope is injected here, after validation, as part of the first `$match`, so no planner (and no
model) ever writes or sees it. A `$text` clause is answered by the engine's BM25 index (built at
ingest, see query.fulltext) as an `_id` pre-filter unless the store is MongoDB with a real text
index and no Chinese; the ids it proposes still pass the scoped pipeline.

A `$lookup` reads another collection, so its joined side is scoped the same way: the same filter as
the first stage of its pipeline (the localField form becomes MongoDB 5's combined form), at most
`MAX_JOINED` joined documents per row, and the hidden fields projected out of them.
"""

from __future__ import annotations

import copy
from typing import Any

from context_engine.access import PUBLIC, check_principals
from context_engine.config import HIDDEN_FIELDS, check_tenant
from context_engine.query.fulltext import text_ids
from context_engine.query.schema import CollectionSchema
from context_engine.store.bounded import (
    Bounds,
    Cancelled,
    QueryBoundExceeded,
    read_cursor,
    run_embedded,
    run_in_process,
    running,
)
from context_engine.store.expressions import INT64_MAX, INT64_MIN
from context_engine.text import HAN

MAX_JOINED = 100  # documents a $lookup joins to one row: its fan-out, whatever the data holds


class ExecutionError(RuntimeError):
    """The database refused or failed the query; the message goes back to the planner."""


def scope_filter(tenant: str, principals: list[str]) -> dict[str, Any]:
    """The tenant and access filter; refuses anything but plain strings (a dict such as
    `{"$ne": None}` passed as a tenant would otherwise become a query operator)."""
    check_tenant(tenant)
    return {"tenant_id": tenant, "acl": {"$in": sorted({PUBLIC, *check_principals(principals)})}}


def strip_hidden_deep(row: Any, keep_group_key: bool) -> Any:
    """Remove hidden fields at every depth. A top-level `_id` survives only as a `$group` key: after
    a `$group` every row is a group (no record's id can reach it, the validator refuses `$_id`).
    An integer that does not fit 64 bits (a `$sum` of many: stored numbers and arithmetic already
    keep to 64 bits) becomes a double, as MongoDB answers it."""
    stack = [(row, True)]
    while stack:
        node, top = stack.pop()
        if isinstance(node, dict):
            for key in [k for k in node if k in HIDDEN_FIELDS and not (top and keep_group_key and k == "_id")]:
                del node[key]
            for key, value in node.items():
                if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
                    node[key] = _as_double(value)
            stack.extend((value, False) for value in node.values())
        elif isinstance(node, list):
            for index, value in enumerate(node):
                if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
                    node[index] = _as_double(value)
            stack.extend((value, False) for value in node)
    return row


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def scoped_pipeline(
    pipeline: list[dict[str, Any]], tenant: str, principals: list[str], max_rows: int
) -> list[dict[str, Any]]:
    """The pipeline as it runs: scope merged into the first `$match`, a final row bound."""
    scope = scope_filter(tenant, principals)
    stages = [_scoped_join(stage, scope) for stage in copy.deepcopy(pipeline)]
    if stages and "$match" in stages[0]:
        # Scope keys are written last: they override anything (validation already forbids them).
        stages[0] = {"$match": {**stages[0]["$match"], **scope}}
    else:
        stages.insert(0, {"$match": scope})
    stages.append({"$limit": max_rows})
    return stages


def _scoped_join(stage: dict[str, Any], scope: dict[str, Any]) -> dict[str, Any]:
    """A `$lookup` whose joined side holds only what `scope` lets through, at most `MAX_JOINED` documents
    per row and none of their hidden fields; any other stage as it is."""
    if "$lookup" not in stage:
        return stage
    spec = stage["$lookup"]
    inner = [_scoped_join(s, scope) for s in spec.get("pipeline", [])]  # the validator allows none; scoped even so
    return {
        "$lookup": {
            **spec,
            "pipeline": [
                {"$match": dict(scope)},
                *inner,
                {"$limit": MAX_JOINED},
                {"$project": dict.fromkeys(sorted(HIDDEN_FIELDS), 0)},
            ],
        }
    }


def _joined_collections(stages: list[dict[str, Any]]) -> list[str]:
    return [stage["$lookup"]["from"] for stage in stages if "$lookup" in stage]


def _is_text_score_sort(stage: dict[str, Any]) -> bool:
    return "$sort" in stage and any(
        isinstance(v, dict) and v.get("$meta") == "textScore" for v in stage["$sort"].values()
    )


def _resolve_text(
    stages: list[dict[str, Any]],
    store: Any,
    collection: str,
    schema: CollectionSchema | None,
    tenant: str,
    native_text: bool,
) -> list[Any] | None:
    """Serve `$text` from BM25: an `_id` pre-filter; returns the ids in rank order (None if native)."""
    match = stages[0].get("$match", {})
    text = match.get("$text")
    if not text:
        return None
    search = str(text.get("$search", ""))
    if native_text and not HAN.search(search):
        return None
    fields = schema.text_fields if schema else []
    # Ranked by relevance, `$text` is a search over all the text; filtering a structured question
    # ("merged PRs about streaming"), it is the records' subject: the first text field, their title.
    by_relevance = any(_is_text_score_sort(stage) for stage in stages)
    ranked = text_ids(
        store, collection, tenant, fields, search, subject=None if by_relevance or not fields else fields[0]
    )
    del match["$text"]
    match["_id"] = {"$in": ranked}
    return ranked


def run_pipeline(
    store: Any,
    collection_name: str,
    pipeline: list[dict[str, Any]],
    *,
    tenant: str,
    principals: list[str],
    schema: CollectionSchema | None,
    max_rows: int = 200,
    max_time_ms: int = 5000,
    max_bytes: int = Bounds.max_bytes,
) -> list[dict[str, Any]]:
    """Run a validated pipeline within the tenant and access scope, a deadline and a byte cap."""
    collection = store.collection(collection_name)
    stages = scoped_pipeline(pipeline, tenant, principals, max_rows)
    bounds = Bounds(max_time_ms=max_time_ms, max_bytes=max_bytes)
    deadline = bounds.deadline()
    native_text = not store.embedded and bool(
        schema and any("text" in str(ix.get("keys")) or ix.get("name", "").endswith("_text") for ix in schema.indexes)
    )
    ranked = _resolve_text(stages, store, collection_name, schema, tenant, native_text)
    cut = (
        next((i for i, stage in enumerate(stages) if _is_text_score_sort(stage)), None) if ranked is not None else None
    )
    head = stages if cut is None else stages[:cut]
    try:
        for joined in _joined_collections(stages):
            store.collection(joined)  # the embedded store reads a collection on first use: before the join does
        if store.embedded:
            rows = run_embedded(collection, head, bounds, deadline, revision=store.revision)
        else:
            with running(bounds, deadline):  # MongoDB keeps its own clock; `mongomock://` reads this one
                rows = read_cursor(collection.aggregate(head, maxTimeMS=max_time_ms), bounds)
        if cut is not None:
            # BM25 served the `$text`, so its rank is the textScore: the stages before the sort ran
            # in the store, the rows are ordered by rank, the rest runs over those rows in process.
            rank = {doc_id: i for i, doc_id in enumerate(ranked)}
            rows.sort(key=lambda row: rank.get(row.get("_id"), len(rank)))
            rows = run_in_process(rows, stages[cut + 1 :], bounds, deadline, collection.database)
    except Cancelled:
        raise  # the caller is gone: not a failed attempt for the planner to correct
    except QueryBoundExceeded as exc:
        raise ExecutionError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - pymongo OperationFailure, mongomock errors: all go back to the planner
        raise ExecutionError(f"{exc.__class__.__name__}: {exc}") from None
    grouped = any("$group" in stage for stage in pipeline)
    return [strip_hidden_deep(row, keep_group_key=grouped) for row in rows]

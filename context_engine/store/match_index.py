"""Secondary indexes for the embedded store's leading `$match`: no full collection scan per question.

mongomock answers `find(query)` by running its Python matcher over every document of the
collection: at 50k pull requests that is ~0.5 s per question, whatever the question (MongoDB itself
would use an index). Here the conjunctive, indexable parts of the query select *candidate* documents
from per-field indexes built on first use, and mongomock's own matcher then runs on the candidates
only (and only for the conjuncts the index does not answer exactly, `_exact_keys`), so the result is
exactly `find(query)`'s, in the same (insertion) order, copied the same way.

Indexable, anywhere in a top-level conjunction (the query itself and `$and` lists):
- `{"path": v}`, `{"path": {"$eq": v}}`, `{"path": {"$in": [v, ...]}}` with v a string, number, bool
  or datetime; `path` may be dotted and cross arrays (a multikey index: a document is listed under
  every value the path reaches, as MongoDB matches any of them);
- `{"path": {"$nin": [s, ...]}}` with strings only: the documents listed under them are dropped;
- `{"path": {"$gte"/"$gt"/"$lte"/"$lt": datetime}}` (MongoDB and mongomock compare a datetime only
  with datetimes: other values never match a datetime range);
- `{"_id": v}` / `{"_id": {"$in": [...]}}` (the `$text` pre-filter), straight from the document map.
Everything else (`$or`, `$not`, `$exists`, `$regex`, `None`, whole-document or array equality,
positional paths like `a.0.b`) narrows nothing and is left to the matcher. A field whose values the
index cannot represent safely (nested arrays) is never indexed.

The indexes of a collection are rebuilt when the store's write revision or the document count
changes (`DocumentStore.revision` is bumped by every write the engine makes).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from datetime import datetime
from typing import Any

__all__ = ["MIN_DOCUMENTS", "candidates"]

MIN_DOCUMENTS = 0  # below this many documents a scan is as fast: no index is built
_SCALARS = (str, int, float, bool, datetime)
_RANGE = ("$gt", "$gte", "$lt", "$lte")
_ATTR = "_context_engine_match_index"


class _Unindexable(Exception):
    pass


def _reached(doc: dict[str, Any], parts: list[str]) -> list[Any]:
    """Every value `parts` reaches in `doc`, arrays expanded (as MongoDB's dotted-path matching)."""
    nodes = [doc]
    for part in parts:
        following = []
        for node in nodes:
            if isinstance(node, dict):
                if part in node:
                    following.append(node[part])
            elif isinstance(node, list):
                for element in node:
                    if isinstance(element, dict):
                        if part in element:
                            following.append(element[part])
                    elif isinstance(element, list):
                        raise _Unindexable  # nested arrays: matching rules too subtle to mirror
        nodes = following
    out = []
    for node in nodes:
        if isinstance(node, list):
            for element in node:
                if isinstance(element, list):
                    raise _Unindexable
                out.append(element)
        else:
            out.append(node)
    return out


class _Field:
    """One path: value -> positions (equality), and the sorted datetimes with their positions (ranges)."""

    def __init__(self, docs: list[dict[str, Any]], path: str):
        parts = path.split(".")
        self.eq: dict[Any, set[int]] = {}
        dated: list[tuple[datetime, int]] = []
        for pos, doc in enumerate(docs):
            for value in _reached(doc, parts):
                if isinstance(value, _SCALARS):
                    self.eq.setdefault(value, set()).add(pos)
                    if isinstance(value, datetime):
                        dated.append((value, pos))
        try:
            dated.sort(key=lambda item: item[0])
            self.dates: list[datetime] | None = [d for d, _ in dated]
            self.date_pos: list[int] = [p for _, p in dated]
        except TypeError:  # naive and aware datetimes mixed: no range index
            self.dates, self.date_pos = None, []

    def buckets(self, values: list[Any]) -> list[set[int]]:
        """The position sets of `values` (shared: never modified by the caller)."""
        out = []
        for value in values:
            try:
                bucket = self.eq.get(value)
            except TypeError:
                continue
            if bucket:
                out.append(bucket)
        return out

    def span(self, bounds: dict[str, datetime]) -> tuple[int, int] | None:
        """[lo, hi) into `date_pos` of the datetimes within `bounds`; None without a range index."""
        if self.dates is None:
            return None
        lo, hi = 0, len(self.dates)
        if "$gte" in bounds:
            lo = max(lo, bisect.bisect_left(self.dates, bounds["$gte"]))
        if "$gt" in bounds:
            lo = max(lo, bisect.bisect_right(self.dates, bounds["$gt"]))
        if "$lte" in bounds:
            hi = min(hi, bisect.bisect_right(self.dates, bounds["$lte"]))
        if "$lt" in bounds:
            hi = min(hi, bisect.bisect_left(self.dates, bounds["$lt"]))
        return lo, max(lo, hi)


class _CollectionIndex:
    def __init__(self, documents: Any):
        self.docs: list[dict[str, Any]] = list(documents.values())
        self.ids = list(documents.keys())
        self._pos_of: dict[Any, int] | None = None
        self.fields: dict[str, _Field | None] = {}  # None: cannot be indexed

    def field(self, path: str) -> _Field | None:
        if path not in self.fields:
            try:
                self.fields[path] = _Field(self.docs, path)
            except _Unindexable:
                self.fields[path] = None
        return self.fields[path]

    def by_id(self, values: list[Any]) -> set[int]:
        if self._pos_of is None:
            self._pos_of = {doc_id: pos for pos, doc_id in enumerate(self.ids)}
        out = set()
        for value in values:
            try:
                pos = self._pos_of.get(value)
            except TypeError:  # unhashable: cannot be an _id here
                continue
            if pos is not None:
                out.add(pos)
        return out


def _scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS)


def _constraints(query: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(path, kind, operand) for each indexable conjunct: kind "eq" (a list of values), "nin" (a list
    of strings none of which the path may reach) or "range"."""
    for key, cond in query.items():
        if key == "$and" and isinstance(cond, list):
            for sub in cond:
                if isinstance(sub, dict):
                    yield from _constraints(sub)
            continue
        if not isinstance(key, str) or key.startswith("$") or any(p.isdigit() or not p for p in key.split(".")):
            continue
        if _scalar(cond):
            yield key, "eq", [cond]
        elif isinstance(cond, dict) and cond and all(isinstance(k, str) and k.startswith("$") for k in cond):
            if "$eq" in cond and _scalar(cond["$eq"]):
                yield key, "eq", [cond["$eq"]]
            if isinstance(cond.get("$in"), list) and all(_scalar(v) for v in cond["$in"]):
                yield key, "eq", list(cond["$in"])
            if isinstance(cond.get("$nin"), list) and all(type(v) is str for v in cond["$nin"]):
                yield key, "nin", list(cond["$nin"])
            bounds = {op: cond[op] for op in _RANGE if isinstance(cond.get(op), datetime)}
            if bounds:
                yield key, "range", bounds


def _exact_keys(query: dict[str, Any], index: _CollectionIndex) -> set[str]:
    """Top-level conjuncts the index answers exactly: string equality (`v`, `{"$eq": v}`, `{"$in":
    [v, ...]}`) and exclusion (`{"$nin": [v, ...]}`) on an indexed path. A string equals only an equal string, as in MongoDB, and the
    buckets list a document under every value its path reaches, so such a conjunct holds for every
    candidate and the matcher need not check it again (numbers and booleans are left to the matcher:
    1, 1.0 and True share a dict bucket but not a match)."""
    exact = set()
    for key, cond in query.items():
        if not isinstance(key, str) or key.startswith("$") or key == "_id":
            continue
        if isinstance(cond, dict) and len(cond) == 1:
            op, operand = next(iter(cond.items()))
            values = (
                [operand] if op == "$eq" else operand if op in ("$in", "$nin") and isinstance(operand, list) else None
            )
        else:
            values = [cond]
        if values and all(type(v) is str for v in values) and index.fields.get(key) is not None:
            exact.add(key)
    return exact


def candidates(
    collection: Any, query: dict[str, Any], revision: int
) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """(the stored documents that may match `query`, a superset of the matches in store order; the
    part of `query` still to check on them), or None when no part of the query narrows the
    collection (then scan it as before).

    The most selective indexable conjunct gives the candidates; the other equality conjuncts then
    drop candidates outside their buckets (ranges after the first are left to the matcher)."""
    store = collection._store  # mongomock's per-collection store
    documents = store._documents
    if len(documents) < MIN_DOCUMENTS:
        return None
    cached = getattr(store, _ATTR, None)
    if cached is None or cached[0] != (revision, len(documents)):
        cached = ((revision, len(documents)), _CollectionIndex(documents))
        setattr(store, _ATTR, cached)
    index: _CollectionIndex = cached[1]
    options: list[tuple[int, Any]] = []  # (size, set of positions | list of bucket sets | (field, span))
    excluded: list[set[int]] = []  # buckets of `$nin` strings: never candidates
    for path, kind, operand in _constraints(query):
        if path == "_id":
            if kind == "eq":
                found = index.by_id(operand)
                options.append((len(found), found))
            continue
        field = index.field(path)
        if field is None:
            continue
        if kind == "eq":
            buckets = field.buckets(operand)
            options.append((sum(len(b) for b in buckets), buckets))
        elif kind == "nin":
            excluded.extend(field.buckets(operand))
        else:
            span = field.span(operand)
            if span is not None:
                options.append((span[1] - span[0], (field, span)))
    if not options:
        return None
    options.sort(key=lambda option: option[0])
    size, first = options[0]
    if size == 0:
        return [], {}
    if isinstance(first, set):
        chosen = first
    elif isinstance(first, list):
        chosen = set().union(*first) if len(first) > 1 else first[0]
    else:
        field, (lo, hi) = first
        chosen = set(field.date_pos[lo:hi])
    for _, other in options[1:]:
        if isinstance(other, list):  # equality buckets: cheap membership tests over the candidates
            chosen = {pos for pos in chosen if any(pos in bucket for bucket in other)}
        elif isinstance(other, set):
            chosen = chosen & other
    if excluded:
        chosen = {pos for pos in chosen if not any(pos in bucket for bucket in excluded)}
    exact = _exact_keys(query, index)
    return [index.docs[pos] for pos in sorted(chosen)], {k: v for k, v in query.items() if k not in exact}

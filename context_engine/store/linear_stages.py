"""mongomock's `$unwind` and `$group`, with the same output, in time linear in the rows.

Why: at 100k PRs, "who reviewed the most PRs in payments" spent 1.3 s in these two stages. mongomock's
`$unwind` deep-copies the whole document, the array being unwound included, once per element of
that array (quadratic in the array's length), only to overwrite the array in each copy. Its `$group`
sorts every row by its group key with a Python BSON comparison (n log n calls of ~5 us each) and
evaluates each row's key twice, just so that `itertools.groupby` finds equal keys side by side.

The versions here keep mongomock's semantics exactly, output order included:
- `$unwind` detaches the array from the document while copying it, so each copy costs the rest of
  the document only; every other line is mongomock's.
- `$group` evaluates each key once and buckets the rows by an exact, typed form of their key
  (same types, same values, same field order). Sorting the distinct keys, each bucket's rows in their
  original order, gives the very sequence mongomock's stable sort gives, so `itertools.groupby` over
  it with the raw keys yields mongomock's groups. Where that reasoning does not hold (a key of a type
  it does not know, or two distinct keys that compare equal in BSON, such as 1 and 1.0), mongomock's
  own handler runs.

`tests/test_linear_stages.py` compares both with mongomock's handlers on generated pipelines.
"""

from __future__ import annotations

import copy
import itertools
from datetime import datetime
from typing import Any

__all__ = ["use_linear_stages"]

_NO_FORM = object()  # a key the typed form does not cover: mongomock's own $group decides


def _unwind(in_collection: list[dict[str, Any]], database: Any, options: Any) -> list[dict[str, Any]]:
    from mongomock import helpers

    if not isinstance(options, dict):
        options = {"path": options}
    path = options["path"]
    if not isinstance(path, str) or path[0] != "$":
        raise ValueError("$unwind failed: exception: field path references must be prefixed "
                         f"with a '$' '{path}'")
    path = path[1:]
    should_preserve_null_and_empty = options.get("preserveNullAndEmptyArrays")
    include_array_index = options.get("includeArrayIndex")
    parent_path, _, child_key = path.rpartition(".")
    unwound_collection = []
    for doc in in_collection:
        try:
            array_value = helpers.get_value_by_dot(doc, path)
        except KeyError:
            if should_preserve_null_and_empty:
                unwound_collection.append(doc)
            continue
        if array_value is None:
            if should_preserve_null_and_empty:
                unwound_collection.append(doc)
            continue
        if array_value == []:
            if should_preserve_null_and_empty:
                new_doc = copy.deepcopy(doc)
                helpers.delete_value_by_dot(new_doc, path)
                unwound_collection.append(new_doc)
            continue
        if isinstance(array_value, list):
            iter_array = enumerate(array_value)
        else:
            iter_array = [(None, array_value)]
        parent = helpers.get_value_by_dot(doc, parent_path) if parent_path else doc
        slot = child_key if isinstance(parent, dict) else int(child_key) if isinstance(parent, list) else None
        for index, field_item in iter_array:
            if slot is None:
                new_doc = copy.deepcopy(doc)
            else:
                parent[slot] = None  # not copied: each copy's value here is replaced right after
                try:
                    new_doc = copy.deepcopy(doc)
                finally:
                    parent[slot] = array_value
            new_doc = helpers.set_value_by_dot(new_doc, path, field_item)
            if include_array_index:
                new_doc = helpers.set_value_by_dot(new_doc, include_array_index, index)
            unwound_collection.append(new_doc)
    return unwound_collection


def _typed_form(value: Any) -> Any:
    """A hashable form equal only for keys of the same types, values and field order; _NO_FORM
    for a type this module does not reason about (ObjectId, bytes, regexes ...)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool, datetime):
        return (kind.__name__, value)
    if kind is dict:
        items = tuple((k, _typed_form(v)) for k, v in value.items())
        return _NO_FORM if any(form is _NO_FORM for _k, form in items) else ("dict", items)
    if kind in (list, tuple):
        forms = tuple(_typed_form(v) for v in value)
        return _NO_FORM if any(form is _NO_FORM for form in forms) else ("list", forms)
    return _NO_FORM


def _group(in_collection: list[dict[str, Any]], database: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    from mongomock import aggregate, filtering

    _id = options["_id"]
    if not _id:
        return _MONGOMOCK["$group"](in_collection, database, options)
    buckets: dict[Any, tuple[Any, list[dict[str, Any]]]] = {}
    for doc in in_collection:
        try:
            key = aggregate._parse_expression(_id, doc, ignore_missing_keys=True)
        except KeyError:
            key = None
        form = _typed_form(key)
        if form is _NO_FORM:
            return _MONGOMOCK["$group"](in_collection, database, options)
        bucket = buckets.get(form)
        if bucket is None:
            buckets[form] = bucket = (key, [])
        bucket[1].append(doc)
    ordered = sorted(buckets.values(), key=lambda bucket: filtering.BsonComparable(bucket[0]))
    for before, after in zip(ordered, ordered[1:]):
        if not filtering.BsonComparable(before[0]) < filtering.BsonComparable(after[0]):
            # two distinct keys that sort as equals: mongomock interleaves their rows
            return _MONGOMOCK["$group"](in_collection, database, options)
    keyed_rows = ((key, doc) for key, docs in ordered for doc in docs)
    grouped_collection = []
    for doc_id, group in itertools.groupby(keyed_rows, key=lambda pair: pair[0]):
        doc_dict = aggregate._accumulate_group(options, [doc for _key, doc in group])
        doc_dict["_id"] = doc_id
        grouped_collection.append(doc_dict)
    return grouped_collection


_MONGOMOCK: dict[str, Any] = {}  # the handlers replaced, for the cases they keep


def use_linear_stages() -> None:
    """Make mongomock run `$unwind` and `$group` with the handlers above (idempotent)."""
    from mongomock import aggregate

    if _MONGOMOCK:
        return
    _MONGOMOCK.update({name: aggregate._PIPELINE_HANDLERS[name] for name in ("$unwind", "$group")})
    aggregate._PIPELINE_HANDLERS["$unwind"] = _unwind
    aggregate._PIPELINE_HANDLERS["$group"] = _group

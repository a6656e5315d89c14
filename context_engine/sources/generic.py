"""A team's own collections: JSON, JSON lines and CSV files (or a folder of them) and MongoDB
collections read into records of a kind the team describes (`kinds.CollectionSpec`).

Each row becomes one record under `ref` = the spec's `ref_prefix` + its key's value. The engine's own
fields (`_id`, `tenant_id`, `acl`, `source`, `acl_partial`) and keys no store can hold (`$…`, with a
'.') are dropped from every row, and the access list comes only from the operator: an access field
naming principals, `--public`, or nobody.
"""

from __future__ import annotations

from typing import Any

from context_engine.sources.normalize import RecordError, convert_dates


def normalize_own(record: Any) -> dict[str, Any]:
    """A record of a tenant's own kind as stored: its `ref` (set by the reader) kept, dates converted.
    RecordError for one that cannot be stored."""
    if not isinstance(record, dict):
        raise RecordError(f"expected an object, got {type(record).__name__}")
    ref = record.get("ref")
    if not isinstance(ref, str) or not ref:
        raise RecordError("a record needs a `ref`")
    try:
        doc = {k: convert_dates(v) for k, v in record.items() if k not in ("_id", "tenant_id")}
    except RecursionError:
        raise RecordError("nested too deeply") from None
    acl = doc.get("acl")
    if acl is not None and not (isinstance(acl, list) and all(type(a) is str for a in acl)):
        raise RecordError("`acl` must be a list of principal strings")
    return doc

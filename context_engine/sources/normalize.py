"""What every connector does to a source record before it is stored.

Records keep their source's field names. Two things are added: dates become real dates (BSON
dates, so `$year`/`$week` and range filters work), and a few derived fields that make records of
different sources queryable the same way (`ref`, the record's source key, and `repo`).

A source object never speaks for the engine. The engine's own fields (`config.HIDDEN_FIELDS`:
`_id`, `tenant_id`, `acl`; the webhook marker `acl_partial`; and `source`, which says which
connector wrote a record and scopes `--prune` and keys) are what connectors and ingest set:
- every connector builds its record from `source_fields(raw)`, the source object without them,
  then adds the access list it computed from the source's own visibility statement and its source;
- `normalize` drops hidden fields below the top level, and `_id`/`tenant_id` at the top level
  (the store sets those), so a record's access is only ever the `acl` its connector put there.
Dropping (rather than skipping the record) keeps a real issue that happens to carry such a field:
it is stored with the access its source states, exactly as without the field.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from context_engine.config import HIDDEN_FIELDS
from context_engine.text import parse_datetime, to_utc_naive

_INT64 = (-(2**63), 2**63 - 1)

ACL_PARTIAL = "acl_partial"
"""Set (True) on a record whose `acl` is a best guess, e.g. from a webhook: it may narrow, never widen."""

ENGINE_FIELDS = HIDDEN_FIELDS | {ACL_PARTIAL, "source"}
"""What a source object may not carry into a record: the engine states these, never the source."""


def source_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """A source object's own fields, without the engine's (`ENGINE_FIELDS`): what a connector builds
    its record from before it adds the access list and source it computed."""
    return {k: v for k, v in raw.items() if k not in ENGINE_FIELDS}


def _storable_key(key: Any) -> bool:
    """What MongoDB (BSON) accepts as a field name: a string, not an operator (`$…`), no NUL."""
    return isinstance(key, str) and not key.startswith("$") and "\x00" not in key


def convert_dates(value: Any) -> Any:
    """Every ISO-8601 datetime string, at any depth, becomes a datetime; hidden fields below the top
    level are dropped (only a record's own top-level `acl` means anything). A value no store can hold
    (a field named `$…` or with a NUL, an integer beyond 64 bits) raises RecordError: that record is
    skipped, where the store would otherwise refuse the whole batch."""
    if isinstance(value, dict):
        bad = next((k for k in value if not _storable_key(k)), None)
        if bad is not None:
            raise RecordError(f"field name {str(bad)[:40]!r} cannot be stored")
        return {k: convert_dates(v) for k, v in value.items() if k not in HIDDEN_FIELDS}
    if isinstance(value, list):
        return [convert_dates(v) for v in value]
    if isinstance(value, str) and len(value) <= 40:
        parsed = parse_datetime(value)
        return parsed if parsed is not None else value
    if isinstance(value, datetime):
        try:
            return to_utc_naive(value)
        except OverflowError:  # a YAML date such as 0001-01-01T00:00:00+01:00: before year 1 in UTC
            raise RecordError("a date beyond what can be stored") from None
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        raise RecordError("an integer beyond 64 bits cannot be stored")
    return value


def slack_ts_to_datetime(ts: str) -> datetime:
    """A Slack `ts` as naive UTC; RecordError for one that is no time (`abc`, `nan`, `1e20`)."""
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC).replace(tzinfo=None)
    except (ValueError, OverflowError, OSError):
        raise RecordError(f"Slack ts {str(ts)[:40]!r} is not a time") from None


def repo_from_url(url: str | None) -> str | None:
    """`https://github.com/o/r/pull/1` or `https://api.github.com/repos/o/r` -> `o/r`."""
    if not url:
        return None
    match = re.search(r"github\.com/(?:repos/)?([^/]+/[^/]+)", url)
    return match.group(1) if match else None


class RecordError(ValueError):
    """One malformed source record: skipped and counted, never fatal."""


# Sources whose issues and pull requests are GitHub's (`source` up to ":", set by connector code; a
# webhook's and the sample corpus's records name none). A Jira or Linear record is keyed by its own
# key even when it carries `number` and a GitHub URL: a record of one tracker never takes a GitHub
# ref (a citation `acme/web#42` always means GitHub's issue 42).
_GITHUB_SOURCES = frozenset({"github", "git"})


def _github_shaped(doc: dict[str, Any]) -> bool:
    source = doc.get("source")
    return not isinstance(source, str) or source.split(":", 1)[0] in _GITHUB_SOURCES


def normalize(collection: str, record: dict[str, Any]) -> dict[str, Any]:
    """Add `ref` (and `repo`, `date`) and convert dates. Raises RecordError for a malformed record."""
    if not isinstance(record, dict):
        raise RecordError(f"expected an object, got {type(record).__name__}")
    try:
        doc = {k: convert_dates(v) for k, v in record.items() if k not in ("_id", "tenant_id")}
    except RecursionError:
        raise RecordError("nested too deeply") from None
    bad = next((k for k in doc if not _storable_key(k)), None)
    if bad is not None:
        raise RecordError(f"field name {str(bad)[:40]!r} cannot be stored")
    acl = doc.get("acl")
    if acl is not None and not (isinstance(acl, list) and all(type(a) is str for a in acl)):
        raise RecordError("`acl` must be a list of principal strings")
    if collection in ("pull_requests", "issues") and "number" in doc and _github_shaped(doc):
        repo = (doc.get("base") or {}).get("repo", {}).get("full_name") if isinstance(doc.get("base"), dict) else None
        repo = repo or repo_from_url(doc.get("repository_url")) or repo_from_url(doc.get("html_url"))
        if not repo or not isinstance(doc.get("number"), int):
            raise RecordError("a GitHub record needs an integer `number` and a repository URL")
        doc["repo"] = repo
        doc["ref"] = f"{repo}#{doc['number']}"
        pr = doc.get("pull_request")
        if collection == "pull_requests" and isinstance(pr, dict):
            # Dumps of /issues carry merge state under `pull_request`; /pulls has it at the top.
            doc.setdefault("merged_at", pr.get("merged_at"))
        if collection == "pull_requests":
            doc.setdefault("merged", doc.get("merged_at") is not None)
            doc.setdefault("draft", False)
    elif collection == "issues" and "key" in doc:
        doc["ref"] = str(doc["key"])
    elif collection == "messages":
        if not doc.get("ts") or not doc.get("channel_id"):
            raise RecordError("a Slack message needs `ts` and `channel_id`")
        doc["ref"] = f"{doc['channel_id']}:{doc['ts']}"
        doc.setdefault("date", to_utc_naive(slack_ts_to_datetime(doc["ts"])))  # stored to the millisecond
    elif collection == "documents":
        ref = doc.get("doc_id") or doc.get("url") or doc.get("path")
        if not ref:
            raise RecordError("a document needs `doc_id`, `url` or `path`")
        doc["ref"] = str(ref)
    elif collection == "commits":
        if not doc.get("sha"):
            raise RecordError("a commit needs `sha`")
        doc["ref"] = str(doc["sha"])
    elif collection == "people":
        ref = doc.get("login") or doc.get("slack_id") or doc.get("email") or doc.get("jira")
        if not ref:
            raise RecordError("a person needs `login`, `slack_id`, `email` or `jira`")
        doc["ref"] = str(ref)
    else:
        raise RecordError(f"no source key for a {collection} record")
    return doc

"""`context-engine ingest SOURCE ...`: which connector reads which source, and the state a source
keeps between runs (the GitHub sync cursor, the hand-written people overrides).

Each reader returns `{collection: [records]}` for one tenant; `ingest.ingest` writes them. Connectors
know nothing of the CLI, and the CLI knows nothing of source formats.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_engine.config import check_tenant
from context_engine.kinds import CollectionSpec
from context_engine.sources.generic import OwnCollection, OwnOptions
from context_engine.sources.input_caps import input_budget
from context_engine.sources.problems import ReadProblems, SourceError

__all__ = ["SOURCES", "ReadResult", "SourceRequest", "read_source", "saved_overrides"]

Batches = dict[str, list[dict[str, Any]]]

# source -> what its paths are (for help and errors)
SOURCES = {
    "sample": "no paths: the bundled sample corpus (tenants acme and globex)",
    "github": "GitHub API dump files (JSON, JSONL, .gz), or --repo owner/name to sync live",
    "git": "one local repository directory",
    "slack": "workspace export .zip files or unpacked folders",
    "jira": "Jira REST search results or JSON exports (JSON, JSONL, .gz)",
    "linear": "Linear GraphQL JSON or CSV exports",
    "docs": "folders of Markdown, Notion or Confluence exports",
    "people": "one people.yaml or .csv of overrides (name, aliases, github, slack, email, jira, team)",
    "json": "your own records: JSON, JSON lines or CSV files, or folders of them, into --collection NAME",
    "mongodb": "your own records: one MongoDB URI, copied read-only (--db, --source-collection) into --collection NAME",
}


@dataclass
class SourceRequest:
    source: str
    paths: list[Path] = field(default_factory=list)
    repo: str | None = None  # github: sync this repository live
    since: str | None = None  # git, github --repo: only history after this date
    full: bool = False  # github --repo: ignore the saved cursor (a full sync, as --prune needs)
    own: OwnOptions | None = None  # json, mongodb: the collection and what the operator says of it
    logins: set[str] = field(default_factory=set)  # json, mongodb: the tenant's people, to find people columns
    uri: str | None = None  # mongodb: the team's server (read only)
    db: str | None = None  # mongodb: the database to read
    source_collection: str | None = None  # mongodb: the collection to read (default: --collection)
    query: dict[str, Any] | None = None  # mongodb: only the documents matching it
    limit: int = 0  # mongodb: at most this many documents (0: all)


@dataclass
class ReadResult:
    per_tenant: dict[str, Batches]
    # Run after the records are committed (saving a sync cursor must not run ahead of the data).
    after_commit: Callable[[], None] | None = None
    kinds: dict[str, list[CollectionSpec]] = field(default_factory=dict)  # a tenant's own kinds read
    notes: list[str] = field(default_factory=list)  # what was inferred, one line per choice
    warnings: list[str] = field(default_factory=list)


def _cursor_path(data_dir: Path, tenant: str, repo: str) -> Path:
    return data_dir / "sync" / check_tenant(tenant) / f"github-{repo.replace('/', '__')}.json"


def _overrides_path(data_dir: Path, tenant: str) -> Path:
    return data_dir / "people" / f"{check_tenant(tenant)}-overrides.json"


def saved_overrides(data_dir: Path, tenant: str) -> list[dict[str, Any]]:
    """The tenant's people overrides, as last loaded by `ingest people FILE` (none: [])."""
    path = _overrides_path(data_dir, tenant)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _need_paths(request: SourceRequest, exactly_one: bool = False) -> None:
    if not request.paths or (exactly_one and len(request.paths) != 1):
        count = "one" if exactly_one else "one or more"
        raise SourceError(f"`ingest {request.source}` needs {count} path(s): {SOURCES[request.source]}")


def _concat(results: list[Batches]) -> Batches:
    out: Batches = {}
    for batches in results:
        for name, records in batches.items():
            out.setdefault(name, []).extend(records)
    return out


def read_source(request: SourceRequest, tenant: str, data_dir: Path, problems: ReadProblems) -> ReadResult:
    """Read one source for `tenant`. Raises SourceError (one line) when it cannot be read at all, or
    when all its files together pass the whole-input caps (`input_caps.input_budget`)."""
    with input_budget():
        return _read_source(request, tenant, data_dir, problems)


def _read_source(request: SourceRequest, tenant: str, data_dir: Path, problems: ReadProblems) -> ReadResult:
    source, paths = request.source, request.paths
    if source not in SOURCES:
        raise SourceError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
    if request.repo and source != "github":
        raise SourceError("--repo is for `ingest github`")
    if (source in ("json", "mongodb")) != (request.own is not None):
        raise SourceError("--collection NAME is for `ingest json` and `ingest mongodb`, which need it")
    if source == "json":
        from context_engine.sources.generic import read_files

        _need_paths(request)
        return _own(tenant, read_files(paths, request.own, request.logins, problems))
    if source == "mongodb":
        return _read_mongodb(request, tenant, problems)
    if source == "sample":
        if paths:
            raise SourceError("`ingest sample` takes no paths")
        from context_engine.sources.sample import generate

        return ReadResult(generate())
    if source == "github" and request.repo:
        return _sync_github(request, tenant, data_dir, problems)
    if source == "github":
        from context_engine.sources.github import read_github_dump

        _need_paths(request)
        return ReadResult({tenant: read_github_dump(paths, problems)})
    if source == "git":
        from context_engine.sources.git import read_git_repo

        _need_paths(request, exactly_one=True)
        return ReadResult({tenant: read_git_repo(paths[0], problems, since=request.since)})
    if source == "slack":
        from context_engine.sources.slack import read_slack_export

        _need_paths(request)
        return ReadResult({tenant: _concat([read_slack_export(p, problems) for p in paths])})
    if source == "jira":
        from context_engine.sources.jira import read_jira

        _need_paths(request)
        return ReadResult({tenant: read_jira(paths, problems)})
    if source == "linear":
        from context_engine.sources.linear import read_linear

        _need_paths(request)
        return ReadResult({tenant: read_linear(paths, problems)})
    if source == "docs":
        from context_engine.sources.docs import read_docs

        _need_paths(request)
        return ReadResult({tenant: _concat([read_docs(p, problems) for p in paths])})
    # people: the overrides are kept beside the data so that every later merge applies them too.
    from context_engine.sources.people import load_overrides

    _need_paths(request, exactly_one=True)
    _write_json(_overrides_path(data_dir, tenant), load_overrides(paths[0]))
    return ReadResult({tenant: {"people": []}})


def _own(tenant: str, read: OwnCollection) -> ReadResult:
    return ReadResult(
        {tenant: {read.spec.name: read.records}},
        kinds={tenant: [read.spec]},
        notes=read.inferred,
        warnings=read.warnings,
    )


def _read_mongodb(request: SourceRequest, tenant: str, problems: ReadProblems) -> ReadResult:
    from pymongo.errors import PyMongoError

    from context_engine.sources.generic import read_mongodb
    from context_engine.store.documents import StoreError, mongodb_client

    if not request.uri or request.paths:
        raise SourceError(f"`ingest mongodb` needs one MongoDB URI: {SOURCES['mongodb']}")
    if not request.db:
        raise SourceError("`ingest mongodb` needs --db DATABASE")
    try:
        client = mongodb_client(request.uri, what="the source URI")
        read = read_mongodb(
            client,
            request.db,
            request.source_collection or request.own.collection,
            request.own,
            request.logins,
            problems,
            request.query,
            request.limit,
        )
    except StoreError as exc:
        raise SourceError(str(exc)) from None
    except PyMongoError as exc:  # refused (authentication, a bad filter): one line, the server's words
        raise SourceError(f"MongoDB refused the read: {exc.__class__.__name__}: {str(exc)[:300]}") from None
    return _own(tenant, read)


def _sync_github(request: SourceRequest, tenant: str, data_dir: Path, problems: ReadProblems) -> ReadResult:
    from context_engine.sources.github_api import github_token, sync_github

    if request.paths:
        raise SourceError("`ingest github --repo owner/name` takes no dump files")
    path = _cursor_path(data_dir, tenant, request.repo)
    cursor = None if request.full or not path.exists() else json.loads(path.read_text(encoding="utf-8"))
    if cursor is None and request.since:
        since = _iso_utc(request.since)
        cursor = {"updated_since": since, "comments_since": since}
    records, new_cursor = sync_github(request.repo, github_token(), cursor, problems)
    return ReadResult({tenant: records}, after_commit=lambda: _write_json(path, new_cursor))


def _iso_utc(text: str) -> str:
    """`--since` as GitHub wants it (ISO 8601, UTC): "2024-05-01", "3 months ago" ..."""
    import dateparser

    when = dateparser.parse(text, settings={"RETURN_AS_TIMEZONE_AWARE": True, "TO_TIMEZONE": "UTC"})
    if when is None:
        raise SourceError(f"--since {text!r}: not a date")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")

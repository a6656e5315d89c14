"""GitHub REST API dumps: `/repos/{o}/{r}/issues` and `/pulls` records as JSON, JSONL or gzip.

A record with a `pull_request` key (the issues endpoint) or with `head`/`merged_at` (the pulls
endpoint) is a pull request; everything else is an issue. Unreadable lines are reported and
skipped; the rest goes in.

Access: a record is public to the tenant only when GitHub says its repository is public
(`repository.private` / `base.repo.private` is false); a private repository's records are readable
by nobody (the dump does not list its collaborators); when the record does not say, it carries no
access list and ingest applies the operator's declaration (`--public`) or denies it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from context_engine.access import PUBLIC
from context_engine.sources.json_files import json_values
from context_engine.sources.normalize import repo_from_url, source_fields
from context_engine.sources.problems import ReadProblems


def iter_json_records(path: Path, problems: ReadProblems) -> Iterator[dict[str, Any]]:
    """Objects from a JSON array/object file or a JSON-lines file (optionally gzipped)."""
    for where, value in json_values(path, problems):
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if isinstance(item, dict):
                yield item
            else:
                problems.add(f"{where}[{i}]" if isinstance(value, list) else where, "not a JSON object")


def visibility_acl(record: dict[str, Any]) -> list[str] | None:
    """The access list GitHub's own fields give, or None when the record does not say."""
    for repo in (record.get("repository"), (record.get("base") or {}).get("repo")):
        if isinstance(repo, dict) and isinstance(repo.get("private"), bool):
            return [] if repo["private"] else [PUBLIC]
    return None


def with_visibility(record: dict[str, Any]) -> dict[str, Any]:
    acl = visibility_acl(record)
    return record if acl is None else {**record, "acl": acl}


def is_pull_request(record: dict[str, Any]) -> bool:
    # The issues endpoint marks a PR with a non-null `pull_request`; /pulls records have `head`.
    return bool(record.get("pull_request")) or "head" in record


def read_github_dump(paths: list[Path], problems: ReadProblems) -> dict[str, list[dict[str, Any]]]:
    """Split dump records into `pull_requests` and `issues`."""
    out: dict[str, list[dict[str, Any]]] = {"pull_requests": [], "issues": []}
    for path in paths:
        for raw in iter_json_records(path, problems):
            # The record's own fields, never the engine's (`acl`, `tenant_id`, `source` ...: see
            # normalize); access comes only from the repository's visibility, the source from its name.
            record = source_fields(raw)
            base = record["base"] if isinstance(record.get("base"), dict) else {}
            base_repo = base["repo"] if isinstance(base.get("repo"), dict) else {}
            repo = base_repo.get("full_name") or repo_from_url(record.get("repository_url") or record.get("html_url"))
            record["source"] = f"github:{repo}" if repo else "github"
            record = with_visibility(record)
            out["pull_requests" if is_pull_request(record) else "issues"].append(record)
    out["people"] = people_from_github(out["pull_requests"] + out["issues"], "github:dump")
    return out


_USER_PATHS = (("user",), ("assignee",), ("merged_by",), ("closed_by",))
_USER_LIST_PATHS = ("assignees", "requested_reviewers")


def people_from_github(records: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """A minimal directory from the users records mention: the login and the numeric user id (which
    ties the account to its `id+login@users.noreply.github.com` commits), with the profile's name and
    e-mail when the API gave them. `source` ("github:...") says GitHub states these accounts."""
    logins: dict[str, dict[str, Any]] = {}

    def add(user: Any) -> None:
        if isinstance(user, dict) and isinstance(user.get("login"), str):
            login = user["login"]
            if login not in logins and user.get("type", "User") != "Bot":
                person = {"login": login, "name": user.get("name") or login, "aliases": [], "source": source}
                if isinstance(user.get("id"), int) and not isinstance(user["id"], bool):
                    person["github_id"] = user["id"]
                if isinstance(user.get("email"), str) and user["email"]:
                    person["email"] = user["email"]
                logins[login] = person

    for record in records:
        for (key,) in _USER_PATHS:
            add(record.get(key))
        for key in _USER_LIST_PATHS:
            for user in record.get(key) or []:
                add(user)
        for review in record.get("reviews") or []:
            if isinstance(review, dict):
                add(review.get("user"))
    return list(logins.values())

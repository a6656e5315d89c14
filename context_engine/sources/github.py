"""GitHub REST API dumps: `/repos/{o}/{r}/issues` and `/pulls` records as JSON, JSONL or gzip.

A record with a `pull_request` key (the issues endpoint) or with `head`/`merged_at` (the pulls
endpoint) is a pull request; everything else is an issue. Unreadable lines are reported and
skipped; the rest goes in.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator


class SourceError(RuntimeError):
    """A source cannot be read at all (missing file, not a dump); one line for the user."""


@dataclass
class ReadProblems:
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, where: str, why: str) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(f"{where}: {why}")


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def iter_json_records(path: Path, problems: ReadProblems) -> Iterator[dict[str, Any]]:
    """Objects from a JSON array/object file or a JSON-lines file (optionally gzipped)."""
    if not path.is_file():
        raise SourceError(f"cannot read {path}: no such file")
    try:
        with _open_text(path) as fh:
            head = fh.read(1)
            while head and head.isspace():
                head = fh.read(1)
            if head == "[":
                try:
                    items = json.loads(head + fh.read())
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{path} is not valid JSON: {exc}") from None
                for i, item in enumerate(items):
                    if isinstance(item, dict):
                        yield item
                    else:
                        problems.add(f"{path}[{i}]", "not a JSON object")
                return
            first = head + fh.readline()
            for lineno, line in enumerate([first] if first.strip() else [], start=1):
                yield from _parse_line(line, path, lineno, problems)
            for lineno, line in enumerate(fh, start=2):
                if line.strip():
                    yield from _parse_line(line, path, lineno, problems)
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None


def _parse_line(line: str, path: Path, lineno: int, problems: ReadProblems) -> Iterator[dict[str, Any]]:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        problems.add(f"{path}:{lineno}", f"malformed JSON ({exc.msg})")
        return
    if isinstance(item, dict):
        yield item
    else:
        problems.add(f"{path}:{lineno}", "not a JSON object")


def is_pull_request(record: dict[str, Any]) -> bool:
    # The issues endpoint marks a PR with a non-null `pull_request`; /pulls records have `head`.
    return bool(record.get("pull_request")) or "head" in record


def read_github_dump(paths: list[Path], problems: ReadProblems) -> dict[str, list[dict[str, Any]]]:
    """Split dump records into `pull_requests` and `issues`."""
    out: dict[str, list[dict[str, Any]]] = {"pull_requests": [], "issues": []}
    for path in paths:
        for record in iter_json_records(path, problems):
            out["pull_requests" if is_pull_request(record) else "issues"].append(record)
    out["people"] = people_from_github(out["pull_requests"] + out["issues"])
    return out


_USER_PATHS = (("user",), ("assignee",), ("merged_by",), ("closed_by",))
_USER_LIST_PATHS = ("assignees", "requested_reviewers")


def people_from_github(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A minimal directory from the logins a dump mentions (a login is all GitHub gives)."""
    logins: dict[str, dict[str, Any]] = {}

    def add(user: Any) -> None:
        if isinstance(user, dict) and isinstance(user.get("login"), str):
            login = user["login"]
            if login not in logins and user.get("type", "User") != "Bot":
                logins[login] = {"login": login, "name": user.get("name") or login, "aliases": []}

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

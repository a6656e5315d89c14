"""Linear issues, stored in the same Jira-like shape as Jira's so every issue question works on both.

Input files, any mix:
- GraphQL responses: `{"data": {"issues": {"nodes": [...], "pageInfo": {...}}}}` (one page per file),
  or a plain JSON array / JSON lines of issue nodes. A node has `id identifier title description
  priority priorityLabel state{name type} assignee{name displayName email} creator{...}
  labels{nodes{name}} cycle{name number} project{name} team{key name} createdAt updatedAt
  completedAt canceledAt url comments{nodes{body user{...} createdAt}}`.
- the workspace's CSV export (Settings > Import/Export): columns `ID, Team, Title, Description,
  Status, Estimate, Priority, Project, Creator, Assignee, Labels, Cycle Number, Cycle Name,
  Created, Updated, Completed, Canceled, UUID, ...`; people are e-mail addresses, dates are
  either ISO or JavaScript's `Wed May 13 2026 11:21:41 GMT+0000 (GMT+00:00)`, labels are
  ", "-separated, and text a spreadsheet could run as a formula starts with a `'`.

Mapping: `key` = identifier; `fields.summary/description`; `fields.status{name, type}`;
`fields.priority.name` (Urgent/High/Medium/Low/No priority); `fields.labels`; `fields.sprint{name,
number}` from the cycle (a cycle is Linear's sprint); `fields.project{key, name}` from the team
(issue keys are the team's); Linear's own project becomes `fields.components[{name}]` (a slice of a
team's work, which is what Jira components are); `fields.created/updated/resolutiondate` (completed
or canceled); comments under `fields.comment.comments`. People become `{name, displayName,
emailAddress}` with `name` = the e-mail when known: it is the one handle both the API and the CSV
export give, so `fields.assignee.name` and the people directory's `jira` handle agree across both.
Every record gets `tracker: "linear"` and `source` "linear:<TEAM>"; no access list (ingest applies
`--public` or denies).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_engine.sources.input_caps import reading_csv
from context_engine.sources.jira import add_issue_people
from context_engine.sources.json_files import json_values, read_text
from context_engine.sources.normalize import RecordError
from context_engine.sources.problems import ReadProblems, SourceError

PRIORITY_NAMES = {0: "No priority", 1: "Urgent", 2: "High", 3: "Medium", 4: "Low"}
_IDENTIFIER = re.compile(r"^([A-Z][A-Z0-9]*)-\d+$")
_JS_DATE = re.compile(r"^\w{3} (\w{3} \d{1,2} \d{4} \d{2}:\d{2}:\d{2}) GMT([+-]\d{4})")
_FORMULA_ESCAPE = re.compile(r"^'(?=[=+\-@])")


def read_linear(paths: list[Path], problems: ReadProblems) -> dict[str, list[dict[str, Any]]]:
    """`issues` and `people` from Linear export files (GraphQL JSON or CSV). An unreadable file
    raises SourceError; a malformed issue is reported and skipped."""
    issues: list[dict[str, Any]] = []
    people: dict[str, dict[str, Any]] = {}
    for path in paths:
        is_csv = path.suffix.lower() == ".csv" or path.name.lower().endswith(".csv.gz")
        for where, convert, raw in _csv_rows(path) if is_csv else _json_nodes(path, problems):
            try:
                issue = convert(raw)
            except RecordError as exc:
                problems.add(where, str(exc))
                continue
            issues.append(issue)
            add_issue_people(people, issue)
    return {"issues": issues, "people": list(people.values())}


# --------------------------------------------------------------------------------------------
# GraphQL JSON
# --------------------------------------------------------------------------------------------
def _json_nodes(path: Path, problems: ReadProblems) -> Iterator[tuple[str, Any, Any]]:
    for where, value in json_values(path, problems):
        if isinstance(value, dict) and "data" in value:  # a raw GraphQL response
            if value.get("errors") and not value.get("data"):
                problems.add(where, f"GraphQL error: {str(value['errors'])[:120]}")
                continue
            value = (value.get("data") or {}).get("issues")
        if isinstance(value, dict) and isinstance(value.get("nodes"), list):
            value = value["nodes"]
        if isinstance(value, list):
            for i, node in enumerate(value):
                yield f"{where}[{i}]", linear_issue, node
        elif isinstance(value, dict) and "identifier" in value:  # one node (a JSON line)
            yield where, linear_issue, value
        else:
            problems.add(where, "not a Linear GraphQL response, node list or issue node")


def linear_issue(node: Any) -> dict[str, Any]:
    """One GraphQL issue node in the Jira-like shape (see the module docstring)."""
    if not isinstance(node, dict):
        raise RecordError("an issue node must be a JSON object")
    identifier = node.get("identifier")
    if not isinstance(identifier, str) or not _IDENTIFIER.match(identifier):
        raise RecordError(f"issue without a valid identifier ({str(identifier)[:30]!r})")
    team = _dict(node.get("team"))
    team_key = team.get("key") or _IDENTIFIER.match(identifier).group(1)
    state = _dict(node.get("state"))
    cycle = _dict(node.get("cycle"))
    priority = node.get("priorityLabel") or PRIORITY_NAMES.get(node.get("priority"))  # type: ignore[arg-type]
    comments = [
        {
            "author": _user(_dict(c).get("user")),
            "body": _dict(c).get("body") or "",
            "created": _dict(c).get("createdAt"),
        }
        for c in _nodes(node.get("comments"))
    ]
    fields = {
        "summary": node.get("title") or "",
        "description": node.get("description"),
        "status": {"name": state["name"], **({"type": state["type"]} if state.get("type") else {})}
        if state.get("name")
        else None,
        "priority": {"name": priority} if priority else None,
        "assignee": _user(node.get("assignee")),
        "reporter": _user(node.get("creator")),
        "labels": [str(label["name"]) for label in _nodes(node.get("labels")) if _dict(label).get("name")],
        "sprint": _cycle(cycle.get("name"), cycle.get("number")),
        "project": {"key": team_key, "name": team.get("name") or team_key},
        "components": [{"name": _dict(node.get("project"))["name"]}] if _dict(node.get("project")).get("name") else [],
        "created": node.get("createdAt"),
        "updated": node.get("updatedAt"),
        "resolutiondate": node.get("completedAt") or node.get("canceledAt"),
        "comment": {"comments": sorted(comments, key=lambda c: str(c["created"] or ""))},
    }
    return _record(node.get("id") or identifier, identifier, team_key, fields, node.get("url"))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _nodes(connection: Any) -> list[Any]:
    """A GraphQL connection's nodes (`{"nodes": [...]}`), or a plain list."""
    if isinstance(connection, dict):
        connection = connection.get("nodes")
    return connection if isinstance(connection, list) else []


def _user(user: Any) -> dict[str, Any] | None:
    if not isinstance(user, dict):
        return None
    email, full, short = user.get("email"), user.get("name"), user.get("displayName")
    handle = email or short or full
    if not handle:
        return None
    out = {"name": str(handle), "displayName": str(full or short or handle)}
    if email:
        out["emailAddress"] = str(email)
    return out


def _cycle(name: Any, number: Any) -> dict[str, Any] | None:
    """A cycle as a sprint; an unnamed cycle is called "Cycle <n>", as Linear's UI calls it."""
    if not name and number in (None, ""):
        return None
    try:
        number = int(number) if number not in (None, "") else None
    except (TypeError, ValueError):
        number = None
    sprint: dict[str, Any] = {"name": str(name or f"Cycle {number}")}
    if number is not None:
        sprint["number"] = number
    return sprint


def _record(linear_id: Any, identifier: str, team_key: str, fields: dict[str, Any], url: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"id": str(linear_id), "key": identifier, "tracker": "linear", "fields": fields}
    if isinstance(url, str) and url:
        record["url"] = url
    record["source"] = f"linear:{team_key}"
    return record


# --------------------------------------------------------------------------------------------
# CSV export
# --------------------------------------------------------------------------------------------
def _csv_rows(path: Path) -> Iterator[tuple[str, Any, Any]]:
    with reading_csv(str(path)):
        reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
        columns = set(reader.fieldnames or ())
        if not {"ID", "Title"} <= columns:
            raise SourceError(f"{path} is not a Linear CSV export (no ID/Title columns)")
        for i, row in enumerate(reader, start=2):  # line 1 is the header
            yield f"{path}:row {i}", csv_issue, row


def csv_issue(row: dict[str, Any]) -> dict[str, Any]:
    """One CSV export row in the Jira-like shape."""
    cell = {k: _FORMULA_ESCAPE.sub("", (v or "").strip()) for k, v in row.items() if isinstance(k, str)}
    identifier = cell.get("ID", "")
    match = _IDENTIFIER.match(identifier)
    if not match:
        raise RecordError(f"row without a valid issue ID ({identifier[:30]!r})")
    team_key = match.group(1)
    fields: dict[str, Any] = {
        "summary": cell.get("Title", ""),
        "description": cell.get("Description") or None,
        "status": {"name": cell["Status"]} if cell.get("Status") else None,
        "priority": {"name": cell["Priority"]} if cell.get("Priority") else None,
        "assignee": _csv_user(cell.get("Assignee")),
        "reporter": _csv_user(cell.get("Creator")),
        "labels": [label.strip() for label in cell.get("Labels", "").split(",") if label.strip()],
        "sprint": _cycle(cell.get("Cycle Name"), cell.get("Cycle Number")),
        "project": {"key": team_key, "name": cell.get("Team") or team_key},
        "components": [{"name": cell["Project"]}] if cell.get("Project") else [],
        "created": linear_date(cell.get("Created")),
        "updated": linear_date(cell.get("Updated")),
        "resolutiondate": linear_date(cell.get("Completed")) or linear_date(cell.get("Canceled")),
        "comment": {"comments": []},  # the CSV export has no comments
    }
    return _record(cell.get("UUID") or identifier, identifier, team_key, fields, None)


def _csv_user(value: str | None) -> dict[str, Any] | None:
    if not value:
        return None
    user = {"name": value, "displayName": value}
    if "@" in value:
        user["emailAddress"] = value
    return user


def linear_date(value: str | None) -> str | None:
    """An export date as ISO 8601 UTC (`2026-05-13T11:21:41.000Z`); None when empty or unreadable."""
    if not value:
        return None
    when: datetime | None = None
    if match := _JS_DATE.match(value):
        when = datetime.strptime(f"{match.group(1)} {match.group(2)}", "%b %d %Y %H:%M:%S %z")
    else:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            import dateparser  # slow to import; only for dates in neither of Linear's formats

            when = dateparser.parse(value, settings={"RETURN_AS_TIMEZONE_AWARE": True, "TIMEZONE": "UTC"})
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"

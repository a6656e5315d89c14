"""Jira issues from REST search results (Server/Data Center v2 and Cloud v2/v3).

Input files, any mix, optionally gzipped: search pages as `GET /rest/api/{2,3}/search` returns them
(`{"startAt", "maxResults", "total", "issues": [...]}`, one page per file, with `names` when fetched
with `expand=names`), a JSON array of issues, or JSON lines with one issue each.

Records keep Jira's REST shape (`id, key, self, fields{...}`) with these changes, so Server and
Cloud dumps answer the same questions:
- rich text: Cloud v3 returns descriptions and comment bodies as ADF documents; they become plain
  text (links keep their hrefs). v2's wiki markup is already a string and stays as it is.
- users: Cloud users carry an `accountId` and no `name`; `name` is set to the accountId so the
  role fields (`fields.assignee.name`, `fields.reporter.name`) and the people directory's `jira`
  handle hold the same value for both.
- sprint: Jira Software keeps sprints in a custom field (`customfield_10020` on Cloud; on Server
  the id varies and the value is a list of `...sprint.Sprint@1f[id=..,state=..,name=..]` strings).
  The issue's current sprint (active, else the next future one, else the last closed one) becomes
  `fields.sprint` (`{name, state, ...}`).
- custom fields that are null are dropped: a search response lists every custom field of the
  site, and hundreds of empty paths would only clutter the discovered schema.
- added: `url` (`<site>/browse/<KEY>`, the site taken from `self`), `source` (no access list: the export does not say who may read an issue; ingest applies `--public` or denies)
  ("jira:<PROJECT>" unless the caller names the source).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from context_engine.sources.adf import adf_to_text, is_adf
from context_engine.sources.json_files import json_values
from context_engine.sources.normalize import RecordError, source_fields
from context_engine.sources.problems import ReadProblems

_KEY = re.compile(r"^[A-Z][A-Z0-9_]*-\d+$")
_USER_FIELDS = ("assignee", "reporter", "creator")
_DEFAULT_SPRINT_FIELD = "customfield_10020"  # Jira Cloud's Sprint field
_GREENHOPPER_SPRINT = re.compile(r"^com\.atlassian\.greenhopper\.service\.sprint\.Sprint@\w+\[(.*)\]$", re.S)
_STATE_RANK = {"closed": 0, "future": 1, "active": 2}  # which sprint an issue is "in" now


def read_jira(paths: list[Path], problems: ReadProblems, source: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """`issues` and `people` from Jira export files. An unreadable file raises SourceError; a
    malformed page or issue is reported and skipped."""
    issues: list[dict[str, Any]] = []
    people: dict[str, dict[str, Any]] = {}
    for path in paths:
        for where, value in json_values(path, problems):
            for item_where, raw, sprint_fields in _raw_issues(where, value, problems):
                try:
                    issue = jira_issue(raw, sprint_fields, source)
                except RecordError as exc:
                    problems.add(item_where, str(exc))
                    continue
                issues.append(issue)
                add_issue_people(people, issue)
    return {"issues": issues, "people": list(people.values())}


def _raw_issues(where: str, value: Any, problems: ReadProblems) -> Iterator[tuple[str, Any, set[str]]]:
    """(where, raw issue, ids of fields named "Sprint") for every issue a JSON value holds."""
    if isinstance(value, dict) and isinstance(value.get("issues"), list):  # a search page
        names = value.get("names") if isinstance(value.get("names"), dict) else {}
        sprint_fields = {fid for fid, name in names.items() if str(name).lower() == "sprint"}
        for i, raw in enumerate(value["issues"]):
            yield f"{where}.issues[{i}]", raw, sprint_fields
    elif isinstance(value, list):
        for i, raw in enumerate(value):
            yield f"{where}[{i}]", raw, set()
    elif isinstance(value, dict) and "fields" in value:  # one issue (a JSON line, GET /issue/KEY)
        yield where, value, set()
    else:
        problems.add(where, "not a Jira search page, issue list or issue")


def jira_issue(raw: Any, sprint_fields: Collection[str] = frozenset(), source: str | None = None) -> dict[str, Any]:
    """One REST issue as the engine stores it (see the module docstring)."""
    if not isinstance(raw, dict):
        raise RecordError("an issue must be a JSON object")
    key, fields = raw.get("key"), raw.get("fields")
    if not isinstance(key, str) or not _KEY.match(key):
        raise RecordError(f"issue without a valid key ({str(key)[:30]!r})")
    if not isinstance(fields, dict):
        raise RecordError(f"{key} has no `fields` object")
    out_fields: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None and name.startswith("customfield_"):
            continue
        out_fields[name] = adf_to_text(value) if is_adf(value) else value
    for name in _USER_FIELDS:
        out_fields[name] = _user(out_fields.get(name))
    if isinstance(out_fields.get("comment"), dict):
        out_fields["comment"] = _comments(out_fields["comment"])
    if not isinstance(out_fields.get("sprint"), dict):
        sprint = current_sprint(fields, sprint_fields)
        if sprint:
            out_fields["sprint"] = sprint
        else:
            out_fields.pop("sprint", None)
    # The issue's own fields, never the engine's (`acl`, `tenant_id`, `source` ...: see normalize).
    record = {k: v for k, v in source_fields(raw).items() if k not in ("fields", "renderedFields")}
    record["fields"] = out_fields
    site = _site(raw.get("self"))
    if site:
        record["url"] = f"{site}/browse/{key}"
    project = out_fields.get("project") if isinstance(out_fields.get("project"), dict) else {}
    record["source"] = source or f"jira:{project.get('key') or key.rsplit('-', 1)[0]}"
    return record


def _site(self_url: Any) -> str | None:
    """`https://acme.atlassian.net/rest/api/3/issue/10001` -> `https://acme.atlassian.net`."""
    if isinstance(self_url, str) and "/rest/" in self_url:
        return self_url.split("/rest/", 1)[0]
    return None


def _user(user: Any) -> Any:
    if isinstance(user, dict) and not user.get("name") and user.get("accountId"):
        return {**user, "name": user["accountId"]}
    return user


def _comments(comment: dict[str, Any]) -> dict[str, Any]:
    comments = []
    for c in comment.get("comments") or []:
        if isinstance(c, dict):
            c = {**c, "author": _user(c.get("author")), "updateAuthor": _user(c.get("updateAuthor"))}
            if is_adf(c.get("body")):
                c["body"] = adf_to_text(c["body"])
            if c["updateAuthor"] is None:
                del c["updateAuthor"]
            comments.append(c)
    return {**comment, "comments": comments}


# --------------------------------------------------------------------------------------------
# Sprints
# --------------------------------------------------------------------------------------------
def current_sprint(fields: dict[str, Any], sprint_fields: Collection[str] = frozenset()) -> dict[str, Any] | None:
    """The sprint the issue is in now, from whichever field holds sprints."""
    candidates = [fid for fid in (*sorted(sprint_fields), _DEFAULT_SPRINT_FIELD) if fid in fields]
    candidates += [
        fid
        for fid, value in fields.items()
        if fid.startswith("customfield_") and fid not in candidates and _looks_like_sprints(value)
    ]
    for fid in candidates:
        sprints = [s for s in (_sprint(v) for v in fields.get(fid) or []) if s]
        if sprints:
            return max(sprints, key=_sprint_order)
    return None


def _looks_like_sprints(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    return all(
        (isinstance(v, dict) and "name" in v and "state" in v and ("boardId" in v or "goal" in v))
        or (isinstance(v, str) and _GREENHOPPER_SPRINT.match(v))
        for v in value
    )


def _sprint(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict) and value.get("name"):
        sprint = dict(value)
    elif isinstance(value, str) and (match := _GREENHOPPER_SPRINT.match(value)):
        # "id=1,rapidViewId=2,state=CLOSED,name=Sprint 1, QA,startDate=..." (a name may hold commas)
        sprint = dict(part.split("=", 1) for part in re.split(r",(?=\w+=)", match.group(1)) if "=" in part)
        sprint = {k: (None if v == "<null>" else v) for k, v in sprint.items()}
        if not sprint.get("name"):
            return None
    else:
        return None
    if isinstance(sprint.get("state"), str):
        sprint["state"] = sprint["state"].lower()
    return sprint


def _sprint_order(sprint: dict[str, Any]) -> tuple[int, int]:
    number = sprint.get("sequence") or sprint.get("id") or 0
    try:
        number = int(number)
    except (TypeError, ValueError):
        number = 0
    return _STATE_RANK.get(str(sprint.get("state")), 0), number


# --------------------------------------------------------------------------------------------
# People
# --------------------------------------------------------------------------------------------
def _issue_users(issue: dict[str, Any]) -> Iterator[dict[str, Any]]:
    fields = issue["fields"]
    for name in _USER_FIELDS:
        yield fields.get(name)
    for comment in (fields.get("comment") or {}).get("comments") or []:
        yield comment.get("author")


def add_issue_people(people: dict[str, dict[str, Any]], issue: dict[str, Any]) -> None:
    """Identity fragments of a Jira-shaped issue's users (Linear issues are mapped to that shape too):
    the user id, display name and (when the site shares it) e-mail. A display name that only repeats
    the id (Linear's CSV export gives one value for both) is not a name."""
    for user in _issue_users(issue):
        if not isinstance(user, dict) or not user.get("name") or user.get("accountType") == "app":
            continue  # automation/app users are not people
        # One fragment per user per source, so `ingest --prune` of one project keeps the others' people.
        person = people.setdefault(
            f"{issue['source']}\0{user['name']}", {"jira": str(user["name"]), "acl": ["*"], "source": issue["source"]}
        )
        if user.get("displayName") and user["displayName"] != user["name"] and "name" not in person:
            person["name"] = str(user["displayName"])
        if user.get("emailAddress") and "email" not in person:
            person["email"] = str(user["emailAddress"])  # the account's own: it joins accounts (`people.VOUCHED`)

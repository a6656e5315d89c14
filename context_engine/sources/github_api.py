"""Live GitHub connector: incremental sync of one repository over the REST API.

Produces the same records as the dump path (`read_github_dump`): `issues` are `/issues` items,
`pull_requests` are `/pulls/{n}` payloads (laid over their `/issues` item, which adds reactions and
`state_reason`) with the PR's `reviews` and `review_comments` embedded as lists, and `people` are
the logins those records mention.

Calls per sync, and why this is the minimal set:
1. `GET /repos/{o}/{r}/issues?state=all&sort=updated&direction=asc&since=...` (paged, 100 a page):
   every changed issue AND every changed PR (a PR is an issue with `pull_request`), so this one
   stream is the change set. Ascending order means an item updated mid-sync moves behind the
   reader and is still seen.
2. `GET /repos/{o}/{r}/pulls/comments?sort=updated&direction=asc&since=...` (paged): every changed
   review comment in the repo in one stream instead of one call per PR. A PR named only here
   (an edited comment need not touch the PR) joins the change set.
3. Per changed PR, `GET /pulls/{n}`: the `/pulls` list would save calls but lacks `merged_by`,
   `additions`, `deletions`, `changed_files` and the review-comment count, which the query layer
   filters on ("merged by", ">500 additions").
4. Per changed PR, `GET /pulls/{n}/reviews`: GitHub has no repo-wide reviews endpoint. Pending
   reviews (drafts only their author sees) are dropped.
5. Only when `/pulls/{n}` counts more review comments than stream 2 returned for it (on an
   incremental sync the older ones predate `since`): `GET /pulls/{n}/comments`, because a stored
   PR record is replaced whole and must carry all of its comments.

Cursor: `{"updated_since": newest issue `updated_at` seen, "updated_seen": [numbers stamped exactly
then], "comments_since": ..., "comments_seen": [comment ids]}`: GitHub's own timestamps, so the local
clock never matters. `since` is inclusive, so the items stamped exactly at the cursor come back;
the `*_seen` lists let a quiet repo's next sync skip them (and the 2-3 calls a re-fetched PR costs)
while an item newly stamped in that same second is still taken. A first sync costs about two calls
per PR; past the hourly 5,000 the client waits for the reset (see github_rest.py).

Access: the repository's visibility, as the pull requests' details state it (`base.repo.private`),
holds for all its records: public → the tenant, private → nobody (listing a private repo's
collaborators needs admin scopes). When no record says, ingest applies the operator's `--public`
declaration or denies access.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx

from context_engine.sources.github import is_pull_request, people_from_github, visibility_acl
from context_engine.sources.github_rest import GitHubRest, NotFound
from context_engine.sources.normalize import source_fields
from context_engine.sources.problems import ReadProblems, SourceError
from context_engine.text import parse_datetime

API_URL = "https://api.github.com"
PER_PAGE = 100  # GitHub's maximum
_OLDEST_FIRST = {"sort": "updated", "direction": "asc", "per_page": PER_PAGE}
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_PULL_URL_NUMBER = re.compile(r"/pulls/(\d+)$")

Record = dict[str, Any]


def github_token() -> str:
    """$GITHUB_TOKEN, else the GitHub CLI's token."""
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    if token:
        return token
    gh = shutil.which("gh")
    if gh:
        try:
            done = subprocess.run([gh, "auth", "token"], capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    raise SourceError("set GITHUB_TOKEN or log in with gh")


def sync_github(
    repo: str,
    token: str,
    cursor: dict | None,
    problems: ReadProblems,
    *,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
    base_url: str = API_URL,
    clock: Callable[[], float] = time.time,
) -> tuple[dict[str, list[Record]], dict]:
    """Records changed since `cursor` (everything when None) and the cursor for the next sync."""
    if not _REPO_NAME.fullmatch(repo):
        raise SourceError(f"expected a repository as owner/name, got {repo!r}")
    issues_mark = _Mark.read(cursor or {}, "updated", "number")
    comments_mark = _Mark.read(cursor or {}, "comments", "id")
    own_client = client is None
    http = client or httpx.Client(timeout=30.0)
    try:
        rest = GitHubRest(token, client=http, base_url=base_url, sleep=sleep, clock=clock)
        sync = _RepoSync(rest, repo, problems)
        items = issues_mark.unseen(sync.changed_items(issues_mark.since))
        comments = comments_mark.unseen(sync.changed_review_comments(comments_mark.since))
        records = sync.records(items, comments)
    finally:
        if own_client:
            http.close()
    return records, {**issues_mark.advance(items).write(), **comments_mark.advance(comments).write()}


class _RepoSync:
    def __init__(self, rest: GitHubRest, repo: str, problems: ReadProblems) -> None:
        self.rest, self.repo, self.problems = rest, repo, problems
        self.source = f"github:{repo}"

    def changed_items(self, since: str | None) -> list[Record]:
        """`/issues` items (issues and PRs) updated since `since`, oldest first."""
        return self._stream(
            "issues", {"state": "all", **_OLDEST_FIRST}, since, lambda item: isinstance(item.get("number"), int)
        )

    def changed_review_comments(self, since: str | None) -> list[Record]:
        return self._stream("pulls/comments", dict(_OLDEST_FIRST), since, lambda item: _pr_number(item) is not None)

    def _stream(
        self, endpoint: str, params: dict[str, Any], since: str | None, valid: Callable[[Record], bool]
    ) -> list[Record]:
        if since:
            params["since"] = since
        out = []
        for page_no, page in enumerate(self.rest.paginate(f"/repos/{self.repo}/{endpoint}", params), start=1):
            for i, item in enumerate(page):
                if isinstance(item, dict) and valid(item) and isinstance(item.get("updated_at"), str):
                    out.append(item)
                else:
                    self.problems.add(
                        f"{self.source} {endpoint} page {page_no}[{i}]",
                        "not a GitHub item (no number, PR link or updated_at)",
                    )
        return out

    def records(self, items: list[Record], comments: list[Record]) -> dict[str, list[Record]]:
        comments_by_pr: dict[int, list[Record]] = {}
        for comment in comments:
            comments_by_pr.setdefault(_pr_number(comment), []).append(comment)
        issues = [{**source_fields(item), "source": self.source} for item in items if not is_pull_request(item)]
        changed_prs: dict[int, Record | None] = {item["number"]: item for item in items if is_pull_request(item)}
        for number in comments_by_pr:
            changed_prs.setdefault(number, None)
        prs = [
            pr
            for number, item in changed_prs.items()
            if (pr := self.pull_request(number, item, comments_by_pr.get(number, []))) is not None
        ]
        # Review commenters are people too; people_from_github reads `user` off any record.
        commenters = [{"user": c.get("user")} for pr in prs for c in pr.get("review_comments") or []]
        people = people_from_github(prs + issues + commenters, self.source)
        # A repository has one visibility: what any pull request's details say holds for its issues too.
        acl = next((a for pr in prs if (a := visibility_acl(pr)) is not None), None)
        if acl is not None:
            prs = [{**pr, "acl": acl} for pr in prs]
            issues = [{**issue, "acl": acl} for issue in issues]
        return {"pull_requests": prs, "issues": issues, "people": people}

    def pull_request(self, number: int, item: Record | None, streamed: list[Record]) -> Record | None:
        """The `/pulls/{n}` payload over its `/issues` item, with reviews and comments embedded."""
        base = f"/repos/{self.repo}/pulls/{number}"
        try:
            detail, _ = self.rest.get_json(base)
            if not isinstance(detail, dict):
                self.problems.add(f"{self.source}#{number}", "the /pulls answer is not an object")
                return None
            reviews = [r for r in self._all(f"{base}/reviews") if r.get("state") != "PENDING"]
            count = detail.get("review_comments")
            comments = self._all(f"{base}/comments") if isinstance(count, int) and count > len(streamed) else streamed
        except NotFound:
            # Deleted or hidden since the listing: keep what /issues said, without the extras.
            self.problems.add(f"{self.source}#{number}", "pull request details not found")
            return {**source_fields(item), "source": self.source} if item else None
        comments = sorted(comments, key=lambda c: (str(c.get("created_at")), c.get("id") or 0))
        # The API's own fields, never the engine's (`acl`, `tenant_id` ...): access is the visibility.
        return {
            **source_fields({**(item or {}), **detail}),
            "reviews": reviews,
            "review_comments": comments,
            "source": self.source,
        }

    def _all(self, path: str) -> list[Record]:
        return [
            item for page in self.rest.paginate(path, {"per_page": PER_PAGE}) for item in page if isinstance(item, dict)
        ]


def _pr_number(comment: Record) -> int | None:
    match = _PULL_URL_NUMBER.search(str(comment.get("pull_request_url") or ""))
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class _Mark:
    """How far one stream has been read: the newest `updated_at` and the items stamped exactly then."""

    name: str  # cursor key prefix: "updated" or "comments"
    key: str  # the item field that identifies it: "number" or "id"
    since: str | None = None
    seen: frozenset = frozenset()

    @classmethod
    def read(cls, cursor: dict, name: str, key: str) -> _Mark:
        since, seen = cursor.get(f"{name}_since"), cursor.get(f"{name}_seen", [])
        if since is not None and (not isinstance(since, str) or parse_datetime(since) is None):
            raise SourceError(f"bad GitHub sync cursor: {name}_since={since!r} is not an ISO-8601 time")
        if not isinstance(seen, list):
            raise SourceError(f"bad GitHub sync cursor: {name}_seen is not a list")
        return cls(name, key, since, frozenset(seen))

    def unseen(self, items: list[Record]) -> list[Record]:
        return [item for item in items if not (item["updated_at"] == self.since and item.get(self.key) in self.seen)]

    def advance(self, items: list[Record]) -> _Mark:
        stamped = [item for item in items if parse_datetime(item["updated_at"]) is not None]
        if not stamped:
            return self
        newest = max((item["updated_at"] for item in stamped), key=parse_datetime)
        seen = {item.get(self.key) for item in stamped if item["updated_at"] == newest}
        if newest == self.since:
            seen |= self.seen
        return replace(self, since=newest, seen=frozenset(seen))

    def write(self) -> dict[str, Any]:
        if self.since is None:
            return {}
        return {f"{self.name}_since": self.since, f"{self.name}_seen": sorted(self.seen, key=str)}

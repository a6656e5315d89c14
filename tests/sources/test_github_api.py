"""Live GitHub connector against recorded REST responses (httpx.MockTransport, no network)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from context_engine.sources.github import read_github_dump
from context_engine.sources.github_api import github_token, sync_github
from context_engine.sources.normalize import normalize
from context_engine.sources.problems import ReadProblems, SourceError
from tests.conftest import TEST_DATA_DIR

FIXTURES = TEST_DATA_DIR / "connectors" / "github_api"
REPO = "huggingface/datasets"
R = f"/repos/{REPO}"
TOKEN = "ghp_test0token"
NOW = 1_740_000_000.0
ISSUES_Q = {"state": "all", "sort": "updated", "direction": "asc", "per_page": "100"}
COMMENTS_Q = {"sort": "updated", "direction": "asc", "per_page": "100"}
PAGE_Q = {"per_page": "100"}
PAGE2 = "https://api.github.com/repositories/250213286/issues?state=all&sort=updated&direction=asc&per_page=100&page=2"
SINCE1, COMMENTS_SINCE1 = "2025-02-20T17:28:54Z", "2025-02-20T17:27:02Z"

Key = tuple[str, frozenset]


def key(path: str, query: dict[str, str]) -> Key:
    return path, frozenset(query.items())


def pull_routes(sync: str, number: int) -> dict[Key, Any]:
    return {
        key(f"{R}/pulls/{number}", {}): f"{sync}/pulls/{number}.json",
        key(f"{R}/pulls/{number}/reviews", PAGE_Q): f"{sync}/pulls/{number}_reviews.json",
    }


SYNC1: dict[Key, Any] = {
    key(f"{R}/issues", ISSUES_Q): (
        "sync1/issues_page1.json",
        {"Link": f'<{PAGE2}>; rel="next", <{PAGE2}>; rel="last"'},
    ),
    key("/repositories/250213286/issues", {**ISSUES_Q, "page": "2"}): "sync1/issues_page2.json",
    key(f"{R}/pulls/comments", COMMENTS_Q): "sync1/pulls_comments.json",
    **{k: v for n in (7408, 7411, 7414, 7397) for k, v in pull_routes("sync1", n).items()},
}
SYNC2: dict[Key, Any] = {
    key(f"{R}/issues", {**ISSUES_Q, "since": SINCE1}): "sync2/issues_since.json",
    key(f"{R}/pulls/comments", {**COMMENTS_Q, "since": COMMENTS_SINCE1}): "sync2/pulls_comments_since.json",
    **pull_routes("sync2", 7402),
    **pull_routes("sync2", 7411),
    **pull_routes("sync1", 7408),
    key(f"{R}/pulls/7411/comments", PAGE_Q): "sync2/pulls/7411_comments.json",
}


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


class GitHubStub:
    """Serves routes (fixture name, (name, headers) or a JSON value); `failures[key]` are answered
    first, in order. Unknown requests fail the test."""

    def __init__(self, routes: dict[Key, Any], failures: dict[Key, list] | None = None) -> None:
        self.routes, self.failures = routes, {k: list(v) for k, v in (failures or {}).items()}
        self.requests: list[Key] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        route = key(request.url.path, dict(request.url.params))
        self.requests.append(route)
        if self.failures.get(route):
            failure = self.failures[route].pop(0)
            if isinstance(failure, Exception):
                raise failure
            return failure
        assert route in self.routes, f"unexpected request {request.url}"
        body, headers = self.routes[route], {}
        if isinstance(body, tuple):
            body, headers = body
        return httpx.Response(200, json=load(body) if isinstance(body, str) else body, headers=headers)


def run(stub: GitHubStub, cursor: dict | None = None, problems: ReadProblems | None = None, sleeps=None):
    sleeps = [] if sleeps is None else sleeps
    client = httpx.Client(transport=httpx.MockTransport(stub))
    return sync_github(
        REPO, TOKEN, cursor, problems or ReadProblems(), client=client, sleep=sleeps.append, clock=lambda: NOW
    )


def by_number(records: list[dict]) -> dict[int, dict]:
    return {r["number"]: r for r in records}


@pytest.fixture(scope="module")
def first_sync():
    stub, sleeps, problems = GitHubStub(SYNC1), [], ReadProblems()
    records, cursor = run(stub, problems=problems, sleeps=sleeps)
    return stub, sleeps, problems, records, cursor


def test_full_sync_pages_through_issues_and_splits_prs_from_issues(first_sync):
    stub, sleeps, problems, records, _ = first_sync
    assert key("/repositories/250213286/issues", {**ISSUES_Q, "page": "2"}) in stub.requests
    assert sorted(by_number(records["pull_requests"])) == [7397, 7408, 7411, 7414]
    assert sorted(by_number(records["issues"])) == [7404, 7412, 7413]
    assert sleeps == [] and problems.count == 0
    # The PR details say the repository is public (`base.repo.private: false`): that holds for its issues.
    for collection in ("pull_requests", "issues"):
        assert {(tuple(r["acl"]), r["source"]) for r in records[collection]} == {(("*",), f"github:{REPO}")}
    assert {r["source"] for r in records["people"]} == {f"github:{REPO}"}
    # The full sync needs no per-PR comments call: the repo-wide stream had every comment.
    assert not [path for path, _ in stub.requests if path.endswith("/comments") and "/pulls/7" in path]


def test_records_have_the_dump_shape_and_normalize(first_sync, tmp_path):
    _, _, _, records, _ = first_sync
    dump = tmp_path / "issues.jsonl"
    dump.write_text(
        "".join(
            json.dumps(item) + "\n"
            for name in ("sync1/issues_page1.json", "sync1/issues_page2.json")
            for item in load(name)
        )
    )
    from_dump = read_github_dump([dump], ReadProblems())
    assert by_number(records["issues"]) == {
        n: {**r, "acl": ["*"], "source": "github:huggingface/datasets"}
        for n, r in by_number(from_dump["issues"]).items()
    }
    assert sorted(by_number(from_dump["pull_requests"])) == sorted(by_number(records["pull_requests"]))

    prs = {r["number"]: normalize("pull_requests", r) for r in records["pull_requests"]}
    assert prs[7408]["ref"] == "huggingface/datasets#7408" and prs[7408]["repo"] == REPO
    assert (prs[7408]["merged"], prs[7408]["merged_by"]["login"], prs[7408]["additions"]) == (True, "lhoestq", 4)
    assert prs[7397]["merged"] is False and prs[7397]["state"] == "closed"
    assert prs[7411]["head"]["repo"]["full_name"] == "dakinggg/datasets" and prs[7411]["base"]["ref"] == "main"
    assert prs[7411]["reactions"]["total_count"] == load("sync1/issues_page1.json")[3]["reactions"]["total_count"]
    assert prs[7411]["reviews"][1]["submitted_at"].isoformat() == "2025-02-19T13:39:50"
    assert {normalize("issues", r)["ref"] for r in records["issues"]} == {f"{REPO}#{n}" for n in (7404, 7412, 7413)}
    assert all(normalize("people", p)["ref"] == p["login"] for p in records["people"])


def test_prs_embed_reviews_and_review_comments(first_sync):
    _, _, _, records, _ = first_sync
    prs = by_number(records["pull_requests"])
    assert [(r["user"]["login"], r["state"]) for r in prs[7411]["reviews"]] == [
        ("lhoestq", "COMMENTED"),
        ("lhoestq", "APPROVED"),
    ]
    assert [c["path"] for c in prs[7411]["review_comments"]] == ["src/datasets/arrow_dataset.py"]
    assert prs[7397]["review_comments"][0]["user"]["login"] == "albertvillanova"
    assert prs[7414]["reviews"] == [] and prs[7414]["review_comments"] == []
    assert prs[7397]["requested_reviewers"][0]["login"] == "mariosasko"
    logins = {p["login"] for p in records["people"]}
    # authors, assignee, merger, reviewer, a commenter who appears nowhere else:
    assert {"dakinggg", "ttim", "lhoestq", "mariosasko", "albertvillanova"} <= logins


def test_incremental_sync_fetches_only_what_changed(first_sync):
    _, _, _, _, cursor = first_sync
    assert cursor == {
        "updated_since": SINCE1,
        "updated_seen": [7397],
        "comments_since": COMMENTS_SINCE1,
        "comments_seen": [1960000033],
    }
    stub = GitHubStub(SYNC2)
    records, cursor2 = run(stub, cursor=cursor)
    pulled = sorted(path for path, _ in stub.requests if "/pulls/" in path and not path.endswith("/pulls/comments"))
    # #7397 comes back (since is inclusive) but was already seen at that second: not fetched again.
    assert pulled == [
        f"{R}/pulls/{n}"
        for n in ("7402", "7402/reviews", "7408", "7408/reviews", "7411", "7411/comments", "7411/reviews")
    ]
    assert [r["number"] for r in records["issues"]] == [7419]
    prs = by_number(records["pull_requests"])
    assert sorted(prs) == [7402, 7408, 7411]
    # 7411 had an older comment before `since`: the record carries both, and its three reviews.
    assert [c["created_at"] for c in prs[7411]["review_comments"]] == ["2025-02-19T10:02:11Z", "2025-02-21T10:15:42Z"]
    assert len(prs[7411]["reviews"]) == 3 and prs[7411]["updated_at"] == "2025-02-21T10:15:42Z"
    assert "edited" in prs[7408]["review_comments"][0]["body"]  # joined the change set through its comment
    assert [r["state"] for r in prs[7402]["reviews"]] == ["APPROVED"]  # the PENDING draft is dropped
    assert cursor2 == {
        "updated_since": "2025-02-24T17:03:43Z",
        "updated_seen": [7419],
        "comments_since": "2025-02-22T08:00:00Z",
        "comments_seen": [1960000011],
    }


def test_quiet_repo_sync_fetches_nothing_more_and_keeps_the_cursor():
    cursor = {
        "updated_since": "2025-02-24T17:03:43Z",
        "updated_seen": [7419],
        "comments_since": "2025-02-22T08:00:00Z",
        "comments_seen": [1960000011],
    }
    stub = GitHubStub(
        {
            key(f"{R}/issues", {**ISSUES_Q, "since": cursor["updated_since"]}): load("sync2/issues_since.json")[-1:],
            key(f"{R}/pulls/comments", {**COMMENTS_Q, "since": cursor["comments_since"]}): load(
                "sync2/pulls_comments_since.json"
            )[-1:],
        }
    )
    records, new_cursor = run(stub, cursor=cursor)
    assert len(stub.requests) == 2 and new_cursor == cursor
    assert records == {"pull_requests": [], "issues": [], "people": []}


def rate_limited(
    status: int, headers: dict[str, str], message: str = "API rate limit exceeded for user ID 1."
) -> httpx.Response:
    return httpx.Response(status, json={"message": message}, headers=headers)


@pytest.mark.parametrize(
    "response, wait",
    [
        (rate_limited(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 42)}), 43.0),
        (rate_limited(429, {"Retry-After": "7"}), 7.0),
        (rate_limited(403, {"X-RateLimit-Remaining": "12"}, "You have exceeded a secondary rate limit."), 60.0),
    ],
)
def test_rate_limit_waits_then_succeeds(first_sync, response, wait):
    first = key(f"{R}/issues", ISSUES_Q)
    sleeps: list[float] = []
    records, _ = run(GitHubStub(SYNC1, {first: [response]}), sleeps=sleeps)
    assert sleeps == [wait]
    assert sorted(by_number(records["pull_requests"])) == sorted(by_number(first_sync[3]["pull_requests"]))


def test_absurd_rate_limit_reset_is_an_error_not_a_two_day_sleep():
    reset = str(int(NOW) + 2 * 86400)
    stub = GitHubStub(
        SYNC1,
        {key(f"{R}/issues", ISSUES_Q): [rate_limited(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})]},
    )
    sleeps: list[float] = []
    with pytest.raises(SourceError, match="rate limit"):
        run(stub, sleeps=sleeps)
    assert sleeps == []


def test_server_and_transport_errors_back_off_then_succeed():
    detail = key(f"{R}/pulls/7411", {})
    stub = GitHubStub(
        SYNC1,
        {
            detail: [
                httpx.Response(502, text="Bad Gateway"),
                httpx.Response(503),
                httpx.ConnectError("connection reset"),
            ]
        },
    )
    sleeps: list[float] = []
    records, _ = run(stub, sleeps=sleeps)
    assert sleeps == [1.0, 2.0, 4.0]
    assert stub.requests.count(detail) == 4
    assert by_number(records["pull_requests"])[7411]["merged_by"]["login"] == "lhoestq"


def test_server_errors_that_persist_end_in_a_source_error():
    stub = GitHubStub(SYNC1, {key(f"{R}/issues", ISSUES_Q): [httpx.Response(502)] * 5})
    sleeps: list[float] = []
    with pytest.raises(SourceError, match="502 5 times"):
        run(stub, sleeps=sleeps)
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


@pytest.mark.parametrize(
    "status, message", [(401, "bad token"), (404, "no such repo or no access"), (403, "denied access")]
)
def test_auth_and_missing_repo_errors(status, message):
    stub = GitHubStub(
        SYNC1,
        {
            key(f"{R}/issues", ISSUES_Q): [
                httpx.Response(status, json={"message": "Bad credentials" if status == 401 else "Not Found"})
            ]
        },
    )
    with pytest.raises(SourceError, match=message) as caught:
        run(stub)
    assert TOKEN not in str(caught.value) and "\n" not in str(caught.value)


def test_missing_pr_details_keep_the_issue_item_and_report_it():
    problems = ReadProblems()
    stub = GitHubStub(SYNC1, {key(f"{R}/pulls/7414", {}): [httpx.Response(404, json={"message": "Not Found"})]})
    records, _ = run(stub, problems=problems)
    pr = by_number(records["pull_requests"])[7414]
    assert problems.count == 1 and "#7414" in problems.examples[0]
    assert "head" not in pr and normalize("pull_requests", pr)["merged_at"].isoformat() == "2025-02-20T14:12:23"


def test_malformed_items_are_reported_and_skipped():
    routes = dict(SYNC1)
    routes[key("/repositories/250213286/issues", {**ISSUES_Q, "page": "2"})] = [
        "not an issue",
        {"title": "no number"},
        *load("sync1/issues_page2.json"),
    ]
    problems = ReadProblems()
    records, _ = run(GitHubStub(routes), problems=problems)
    assert problems.count == 2 and "page 2[0]" in problems.examples[0]
    assert len(records["issues"]) + len(records["pull_requests"]) == 7


def test_pagination_link_off_the_api_host_is_refused():
    routes = dict(SYNC1)
    routes[key(f"{R}/issues", ISSUES_Q)] = (
        "sync1/issues_page1.json",
        {"Link": '<https://evil.example/issues?page=2>; rel="next"'},
    )
    with pytest.raises(SourceError, match=r"off api\.github\.com"):
        run(GitHubStub(routes))


@pytest.mark.parametrize(
    "repo, cursor",
    [
        ("huggingface", None),
        (REPO, {"updated_since": "last tuesday"}),
        (REPO, {"updated_since": SINCE1, "updated_seen": 7397}),
    ],
)
def test_bad_repo_name_or_cursor(repo, cursor):
    with pytest.raises(SourceError):
        sync_github(
            repo, TOKEN, cursor, ReadProblems(), client=httpx.Client(transport=httpx.MockTransport(GitHubStub({})))
        )


def test_github_token_from_env_then_gh_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_TOKEN", " ghp_from_env\n")
    assert github_token() == "ghp_from_env"

    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("PATH", str(tmp_path))  # no gh here
    with pytest.raises(SourceError, match="set GITHUB_TOKEN or log in with gh"):
        github_token()

    gh = tmp_path / "gh"
    gh.write_text('#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo gho_from_cli\n')
    gh.chmod(0o755)
    assert github_token() == "gho_from_cli"

    gh.write_text("#!/bin/sh\necho 'You are not logged into any GitHub hosts' >&2\nexit 1\n")
    with pytest.raises(SourceError, match="set GITHUB_TOKEN"):
        github_token()


def test_incremental_records_upsert_over_the_first_sync(first_sync, tmp_path):
    from context_engine.config import Settings
    from context_engine.ingest import ingest

    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    first = ingest(settings, {"t": first_sync[3]}, index=False)[0]
    records, _ = run(GitHubStub(SYNC2), cursor=first_sync[4])
    second = ingest(settings, {"t": records}, index=False)[0]
    assert first.skipped == second.skipped == 0
    assert (first.written["pull_requests"].inserted, first.written["issues"].inserted) == (4, 3)
    prs = second.written["pull_requests"]
    assert (prs.inserted, prs.updated) == (1, 2)  # #7402 is new; #7408 and #7411 replace their old records

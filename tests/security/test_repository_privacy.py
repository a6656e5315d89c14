"""Class 4, a repository's privacy is the repository's, not one record's: a signed GitHub event that
states its repository is private (a `repository` event `privatized`, or any PR / issue / review event
whose `repository.private` is true) closes every stored record of that repository, not only the
record it delivers. Attacked: a repository made private kept every earlier PR and issue readable by
the whole tenant (only the delivered record narrowed; `repository` events were ignored)."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from context_engine.config import Settings
from context_engine.server import ApiKey, create_app
from tests.serving import Server, signed_github, stored_record

SECRET = "repository-privacy-secret"


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _pull(repo: str, number: int, private: bool, updated_at: str = "2026-11-29T09:00:00Z") -> dict:
    return {
        "id": 660000 + number,
        "number": number,
        "title": f"Change {number}",
        "body": "details",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-28T09:00:00Z",
        "updated_at": updated_at,
        "html_url": f"https://github.com/{repo}/pull/{number}",
        "head": {"ref": f"change-{number}"},
        "base": {"ref": "main", "repo": {"full_name": repo, "private": private}},
    }


def _issue(repo: str, number: int, private: bool) -> dict:
    return {
        "id": 650000 + number,
        "number": number,
        "title": f"Issue {number}",
        "body": "details",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-28T09:00:00Z",
        "updated_at": "2026-11-29T09:00:00Z",
        "html_url": f"https://github.com/{repo}/issues/{number}",
        "repository_url": f"https://api.github.com/repos/{repo}",
        "repository": {"full_name": repo, "private": private},
    }


@pytest.fixture
def data_dir(sample_dir, tmp_path):
    from context_engine.ingest import ingest
    from context_engine.sources.github import with_visibility

    copy = tmp_path / "data"
    shutil.copytree(sample_dir, copy)
    # A dump (authoritative) of a public repository, and of another public repository.
    ingest(
        Settings(data_dir=copy, mongodb_uri=None),
        {
            "acme": {
                "pull_requests": [
                    with_visibility(_pull("acme/vault", 1, False)),
                    with_visibility(_pull("acme/vault", 2, False)),
                    with_visibility(_pull("acme/docs-site", 3, False)),
                ],
                "issues": [with_visibility(_issue("acme/vault", 4, False))],
            }
        },
        index=False,
    )
    return copy


@pytest.fixture
def server(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, {"k": ApiKey(tenant="acme")})) as running:
        yield running


def _acl(data_dir, collection: str, ref: str) -> list[str] | None:
    record = stored_record(data_dir, collection, ref)
    return None if record is None else record["acl"]


def _github(server, payload: dict, event: str, delivery: str) -> httpx.Response:
    response = signed_github(server.url, SECRET, json.dumps(payload).encode(), event, delivery)
    assert response.status_code == 200, response.text
    return response


def _vault_acls(data_dir) -> list:
    return [
        _acl(data_dir, "pull_requests", "acme/vault#1"),
        _acl(data_dir, "pull_requests", "acme/vault#2"),
        _acl(data_dir, "issues", "acme/vault#4"),
    ]


def test_a_repository_privatized_event_closes_every_record_of_the_repository(server, data_dir):
    assert _vault_acls(data_dir) == [["*"], ["*"], ["*"]]
    _github(
        server,
        {"action": "privatized", "repository": {"full_name": "acme/vault", "private": True}},
        "repository",
        "d-privatized",
    )
    assert _vault_acls(data_dir) == [[], [], []]
    assert _acl(data_dir, "pull_requests", "acme/docs-site#3") == ["*"]  # another repository is untouched


def test_one_record_saying_its_repository_is_private_closes_the_others_too(server, data_dir):
    pull = _pull("acme/vault", 5, True, updated_at="2026-11-30T09:00:00Z")
    _github(
        server,
        {"action": "opened", "pull_request": pull, "repository": {"full_name": "acme/vault", "private": True}},
        "pull_request",
        "d-5",
    )
    assert _acl(data_dir, "pull_requests", "acme/vault#5") == []
    assert _vault_acls(data_dir) == [[], [], []]
    assert _acl(data_dir, "pull_requests", "acme/docs-site#3") == ["*"]


def test_a_repository_publicized_event_opens_nothing(server, data_dir):
    _github(
        server,
        {"action": "privatized", "repository": {"full_name": "acme/vault", "private": True}},
        "repository",
        "d-priv",
    )
    _github(
        server,
        {"action": "publicized", "repository": {"full_name": "acme/vault", "private": False}},
        "repository",
        "d-pub",
    )
    assert _vault_acls(data_dir) == [[], [], []]


@pytest.mark.parametrize("action", ["deleted", "transferred"])
def test_a_repository_deleted_or_transferred_closes_its_records(server, data_dir, action):
    _github(
        server,
        {"action": action, "repository": {"full_name": "acme/vault", "private": False}},
        "repository",
        f"d-repo-{action}",
    )
    assert _vault_acls(data_dir) == [[], [], []]
    assert _acl(data_dir, "pull_requests", "acme/docs-site#3") == ["*"]


def test_a_record_saying_its_repository_is_private_is_closed_whatever_the_event_says(server, data_dir):
    pull = _pull("acme/vault", 6, True, updated_at="2026-11-30T10:00:00Z")
    _github(
        server,
        {"action": "opened", "pull_request": pull, "repository": {"full_name": "acme/vault", "private": False}},
        "pull_request",
        "d-6",
    )
    assert _acl(data_dir, "pull_requests", "acme/vault#6") == []

"""Class 4, a deletion is the narrowest event there is: a Slack `message_deleted` and a GitHub issue
`deleted` or `transferred` close the stored record (text removed, readable by nobody). Attacked: both
were ignored or applied as an ordinary update, so a message deleted from a public channel (a pasted
secret) and a deleted issue stayed readable by the whole tenant, in queries and in search."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from context_engine.config import Settings
from context_engine.server import ApiKey, create_app
from context_engine.store.documents import open_store
from tests.serving import Server, signed_github, signed_slack, stored_record

SECRET = "deletion-test-secret"
PUBLIC_CHANNEL = "C02WEBFE5N"  # #web in the sample: stored ["*"]


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def data_dir(sample_dir, tmp_path_factory):
    copy = tmp_path_factory.mktemp("deletions") / "data"
    shutil.copytree(sample_dir, copy)
    return copy


@pytest.fixture(scope="module")
def server(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, {"k": ApiKey(tenant="acme")})) as running:
        yield running


def _slack(server, event: dict, event_id: str) -> httpx.Response:
    body = json.dumps({"type": "event_callback", "event_id": event_id, "event": event}).encode()
    response = signed_slack(server.url, SECRET, body)
    assert response.status_code == 200, response.text
    return response


def _github(server, payload: dict, event: str, delivery: str) -> httpx.Response:
    response = signed_github(server.url, SECRET, json.dumps(payload).encode(), event, delivery)
    assert response.status_code == 200, response.text
    return response


def test_a_slack_message_deleted_is_closed_and_its_text_gone(server, data_dir):
    ts = "1796500001.000100"
    posted = {
        "type": "message",
        "channel": PUBLIC_CHANNEL,
        "channel_type": "channel",
        "user": "U0DCC75DEF",
        "text": "oops the prod token is tok-quizzical-99",
        "ts": ts,
    }
    _slack(server, posted, "Ev-post")
    assert stored_record(data_dir, "messages", f"{PUBLIC_CHANNEL}:{ts}")["acl"] == ["*"]
    _slack(
        server,
        {
            "type": "message",
            "subtype": "message_deleted",
            "hidden": True,
            "channel": PUBLIC_CHANNEL,
            "channel_type": "channel",
            "ts": "1796500099.000100",
            "deleted_ts": ts,
            "previous_message": {"type": "message", "user": "U0DCC75DEF", "text": posted["text"], "ts": ts},
        },
        "Ev-delete",
    )
    stored = stored_record(data_dir, "messages", f"{PUBLIC_CHANNEL}:{ts}")
    assert stored["acl"] == [] and "quizzical" not in json.dumps(stored, default=str)
    # The tombstone is not the channel's list: the next message of the public channel is public.
    _slack(server, {**posted, "ts": "1796500100.000100", "text": "all good now"}, "Ev-post-after")
    assert stored_record(data_dir, "messages", f"{PUBLIC_CHANNEL}:1796500100.000100")["acl"] == ["*"]
    # A deletion of a message never stored writes nothing.
    _slack(
        server,
        {
            "type": "message",
            "subtype": "message_deleted",
            "channel": PUBLIC_CHANNEL,
            "ts": "1796500098.000100",
            "deleted_ts": "1796500097.000100",
        },
        "Ev-delete-unknown",
    )
    assert stored_record(data_dir, "messages", f"{PUBLIC_CHANNEL}:1796500097.000100") is None


def _issue(number: int, updated_at: str) -> dict:
    return {
        "id": 640000 + number,
        "number": number,
        "title": "Leaked key in logs",
        "body": "key sk-wobbly-17",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-28T09:00:00Z",
        "updated_at": updated_at,
        "html_url": f"https://github.com/acme/infra/issues/{number}",
        "repository_url": "https://api.github.com/repos/acme/infra",
    }


@pytest.mark.parametrize("action", ["deleted", "transferred"])
def test_a_github_issue_deleted_or_transferred_is_closed(server, data_dir, action):
    number = {"deleted": 7301, "transferred": 7302}[action]
    repository = {"full_name": "acme/infra", "private": False}
    _github(
        server,
        {"action": "opened", "issue": _issue(number, "2026-11-29T09:00:00Z"), "repository": repository},
        "issues",
        f"d-{number}-open",
    )
    assert stored_record(data_dir, "issues", f"acme/infra#{number}")["acl"] == ["*"]
    _github(
        server,
        {"action": action, "issue": _issue(number, "2026-11-29T09:00:00Z"), "repository": repository},
        "issues",
        f"d-{number}-{action}",
    )
    stored = stored_record(data_dir, "issues", f"acme/infra#{number}")
    assert stored["acl"] == [] and "wobbly" not in json.dumps(stored, default=str)


PRIVATE_CHANNEL = "G04SECPR9Z"  # #security-private in the sample: stored as its members


def _channel_acls(data_dir, channel: str) -> list[list[str]]:
    return [
        d["acl"]
        for d in open_store(Settings(data_dir=data_dir, mongodb_uri=None))
        .collection("messages")
        .find({"tenant_id": "acme", "channel_id": channel})
    ]


def test_a_member_who_left_a_private_channel_reads_none_of_it(server, data_dir):
    """Removed from a private channel (offboarded from #security-private), a member kept reading all of it
    until the next export: `member_left_channel` was ignored."""
    before = _channel_acls(data_dir, PRIVATE_CHANNEL)
    assert before and all("slack:U0DCC75DEF" in acl for acl in before)
    _slack(
        server,
        {
            "type": "member_left_channel",
            "user": "U0DCC75DEF",
            "channel": PRIVATE_CHANNEL,
            "channel_type": "G",
            "team": "T0ACME",
        },
        "Ev-left",
    )
    after = _channel_acls(data_dir, PRIVATE_CHANNEL)
    assert len(after) == len(before)
    assert all("slack:U0DCC75DEF" not in acl and acl and "*" not in acl for acl in after)
    assert all(set(a) == set(b) - {"slack:U0DCC75DEF"} for a, b in zip(after, before))
    # A public channel stays the tenant's.
    _slack(
        server,
        {"type": "member_left_channel", "user": "U0DCC75DEF", "channel": PUBLIC_CHANNEL, "channel_type": "C"},
        "Ev-left-public",
    )
    assert all(acl == ["*"] for acl in _channel_acls(data_dir, PUBLIC_CHANNEL) if acl != [])

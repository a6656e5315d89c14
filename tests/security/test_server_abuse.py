"""Classes 1 (webhook part), 6 and 7 over real HTTP on loopback: the server sheds hostile load fast
and in JSON, and signed webhooks can neither widen an access list nor roll stored state back."""

from __future__ import annotations

import hashlib
import hmac
import json
import resource
import shutil
import socket
import time

import httpx
import pytest

from context_engine.config import Settings
from context_engine.server import ApiKey, Limits, create_app, load_keys
from context_engine.store.documents import open_store, record_id
from tests.serving import Server

SECRET = "abuse-test-secret"
KEYS = {
    "member-key": ApiKey(tenant="acme", user="sokafor"),
    "anon-key": ApiKey(tenant="acme"),
    "outsider-key": ApiKey(tenant="acme", user="zwei-dev"),
}
NOW = "2026-11-30T12:00:00Z"


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("CONTEXT_ENGINE_USER", "sokafor")  # the server's own environment names an asker
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def data_dir(sample_dir, tmp_path_factory):
    copy = tmp_path_factory.mktemp("abuse") / "data"
    shutil.copytree(sample_dir, copy)
    return copy


@pytest.fixture(scope="module")
def server(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    limits = Limits(requests_per_minute=30, timeout_seconds=60)
    with Server(create_app(settings, KEYS, limits)) as running:
        yield running


def _sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def _github(server, event: str, payload: dict, delivery: str) -> httpx.Response:
    body = json.dumps(payload).encode()
    return httpx.post(
        f"{server.url}/ingest/github",
        content=body,
        timeout=60,
        headers={
            "X-GitHub-Event": event,
            "X-Hub-Signature-256": _sign(body),
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
        },
    )


def _slack(server, payload: dict) -> httpx.Response:
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()))
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return httpx.post(
        f"{server.url}/ingest/slack",
        content=body,
        timeout=60,
        headers={
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
            "Content-Type": "application/json",
        },
    )


def _stored(data_dir, collection: str, ref: str) -> dict | None:
    return (
        open_store(Settings(data_dir=data_dir, mongodb_uri=None))
        .collection(collection)
        .find_one({"_id": record_id("acme", ref)})
    )


# -- load shedding -----------------------------------------------------------------------------


def test_a_huge_question_is_refused_fast_and_small(server):
    started = time.monotonic()
    response = httpx.post(
        f"{server.url}/context/invoke",
        headers={"Authorization": "Bearer member-key"},
        json={"input": {"question": "why " * 225_000}},
        timeout=30,
    )  # ~900 KB
    assert response.status_code == 413 and "error" in response.json()
    assert time.monotonic() - started < 2


def test_a_question_over_the_length_cap_is_a_400_before_any_work(server):
    response = httpx.post(
        f"{server.url}/context/invoke",
        headers={"Authorization": "Bearer member-key"},
        json={"input": {"question": "x" * 4001, "now": NOW}},
        timeout=30,
    )
    assert response.status_code == 400 and "at most 4,000" in response.json()["error"]


def test_batch_items_count_against_the_rate_limit(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, KEYS, Limits(requests_per_minute=10))) as tight:
        batch = {"inputs": [{"question": "how many open PRs are there?", "now": NOW}] * 40}
        response = httpx.post(
            f"{tight.url}/context/batch", headers={"Authorization": "Bearer anon-key"}, json=batch, timeout=60
        )
        assert response.status_code == 429 and "each /batch input counts" in response.json()["error"]


def test_an_unauthenticated_streamed_body_is_cut_at_the_cap_before_buffering(server):
    def forever():
        chunk = b"x" * (1 << 20)
        for _ in range(400):  # 400 MB if nobody stopped reading
            yield chunk

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    try:
        response = httpx.post(
            f"{server.url}/ingest/github", content=forever(), timeout=30, headers={"X-GitHub-Event": "pull_request"}
        )
        assert response.status_code == 413
    except httpx.HTTPError:
        pass  # the server answered 413 and closed while the client was still sending: also a refusal
    assert time.monotonic() - started < 10
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100  # MB


@pytest.mark.parametrize("header", ["X-Hub-Signature-256", "Authorization"])
def test_non_ascii_and_malformed_auth_headers_are_4xx(server, header):
    for value in ("sha256=\u00e9\u00e9", "Bearer \u00ff\u00fe", "Bearer", "", "\u00e9"):
        target = "/ingest/github" if header.startswith("X-Hub") else "/context/input_schema"
        response = (
            httpx.post(
                f"{server.url}{target}",
                content=b"{}",
                timeout=30,
                headers={header: value.encode("latin-1"), "X-GitHub-Event": "ping"},
            )
            if target.startswith("/ingest")
            else httpx.get(f"{server.url}{target}", headers={header: value.encode("latin-1")}, timeout=30)
        )
        assert 400 <= response.status_code < 500, (value, response.status_code, response.text)


def test_health_names_no_tenant(server):
    response = httpx.get(f"{server.url}/healthz")
    assert response.status_code == 200 and "acme" not in response.text and "globex" not in response.text


def test_a_key_without_a_person_reads_public_records_only(server):
    # The server's environment says CONTEXT_ENGINE_USER=sokafor (a #security-private member): the
    # person-less key must not inherit that.
    def channels(key: str) -> set[str]:
        out = httpx.post(
            f"{server.url}/context/invoke",
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
            json={"input": {"question": "how many Slack messages per channel?", "now": NOW}},
        )
        assert out.status_code == 200, out.text
        return (
            {str(row.get("_id")) for q in out.json()["output"].get("queries", []) for row in q.get("rows", [])}
            | {c.get("title") or "" for c in out.json()["output"].get("citations", [])}
            | {out.json()["output"].get("answer", "")}
        )

    assert not any("security-private" in text for text in channels("anon-key"))
    assert any("security-private" in text for text in channels("member-key"))


def test_a_key_whose_person_is_unknown_is_refused_at_startup(data_dir, tmp_path):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with pytest.raises(ValueError, match="ghost-user"):
        create_app(settings, {"k": ApiKey(tenant="acme", user="ghost-user")})
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k\u00e9y": {"tenant": "acme"}}))
    with pytest.raises(ValueError, match="printable ASCII"):
        load_keys(keys)
    keys.write_text(json.dumps({"key": {"tenant": "../acme"}}))
    with pytest.raises(ValueError, match="tenant"):
        load_keys(keys)


def test_serve_refuses_an_unknown_person_in_one_line(data_dir, tmp_path):
    import os
    import subprocess
    import sys

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"key-1": {"tenant": "acme", "user": "ghost-user"}}))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "serve",
            "--data-dir",
            str(data_dir),
            "--keys",
            str(keys),
            "--port",
            str(port),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_BASE_URL": ""},
    )
    assert out.returncode == 2 and "ghost-user" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


# -- webhooks: access never widened, replays never roll back, deliveries applied once -----------


def test_a_private_channel_message_by_webhook_is_not_readable_by_a_non_member(server, data_dir):
    event = {
        "type": "message",
        "channel": "G04SECPR9Z",
        "channel_type": "group",
        "user": "U0DCC75DEF",
        "text": "the quarnix signing key is rotated",
        "ts": "1796400000.000100",
    }
    response = _slack(server, {"type": "event_callback", "event_id": "Ev-private-1", "event": event})
    assert response.status_code == 200, response.text
    stored = _stored(data_dir, "messages", "G04SECPR9Z:1796400000.000100")
    assert stored is not None and "*" not in stored["acl"] and "slack:U0DCC75DEF" in stored["acl"]
    # a re-delivery claiming a public channel cannot widen it
    _slack(
        server, {"type": "event_callback", "event_id": "Ev-private-2", "event": {**event, "channel_type": "channel"}}
    )
    assert "*" not in _stored(data_dir, "messages", "G04SECPR9Z:1796400000.000100")["acl"]


def test_an_unknown_private_channel_is_readable_by_nobody(server, data_dir):
    event = {
        "type": "message",
        "channel": "G0NEWCHAN1",
        "channel_type": "group",
        "user": "U0DCC75DEF",
        "text": "brand new private channel",
        "ts": "1796400001.000100",
    }
    assert _slack(server, {"type": "event_callback", "event_id": "Ev-new-1", "event": event}).status_code == 200
    assert _stored(data_dir, "messages", "G0NEWCHAN1:1796400001.000100")["acl"] == []


def test_a_private_repository_by_webhook_is_readable_by_nobody(server, data_dir):
    pull = {
        "id": 1,
        "number": 7001,
        "title": "Private thing",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "html_url": "https://github.com/acme/secret/pull/7001",
        "updated_at": "2026-11-29T10:00:00Z",
        "base": {"ref": "main", "repo": {"full_name": "acme/secret", "private": True}},
    }
    response = _github(
        server,
        "pull_request",
        {"action": "opened", "pull_request": pull, "repository": {"full_name": "acme/secret", "private": True}},
        "d-private",
    )
    assert response.status_code == 200, response.text
    assert _stored(data_dir, "pull_requests", "acme/secret#7001")["acl"] == []


def test_a_replayed_older_delivery_does_not_reopen_a_merged_pr(server, data_dir):
    base = {
        "id": 2,
        "number": 7002,
        "title": "Ship the thing",
        "user": {"login": "rsh-dev"},
        "html_url": "https://github.com/acme/web/pull/7002",
        "base": {"ref": "main", "repo": {"full_name": "acme/web", "private": False}},
    }
    opened = {**base, "state": "open", "title": "WIP: Ship the thing", "updated_at": "2026-11-28T10:00:00Z"}
    merged = {**base, "state": "closed", "merged_at": "2026-11-29T10:00:00Z", "updated_at": "2026-11-29T10:00:00Z"}
    assert _github(server, "pull_request", {"action": "opened", "pull_request": opened}, "d-open").status_code == 200
    assert _github(server, "pull_request", {"action": "closed", "pull_request": merged}, "d-merged").status_code == 200
    # another old delivery (the same body again is refused as duplicate content before its time is read)
    replay = _github(server, "pull_request", {"action": "edited", "pull_request": opened}, "d-open-replayed-late")
    assert replay.json() == {"ignored": "older than what is stored"}
    stored = _stored(data_dir, "pull_requests", "acme/web#7002")
    assert stored["state"] == "closed" and stored["merged"] and not stored["title"].startswith("WIP")


def test_the_same_delivery_is_applied_once(server, data_dir):
    pull = {
        "id": 3,
        "number": 7003,
        "title": "Once",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "html_url": "https://github.com/acme/web/pull/7003",
        "updated_at": "2026-11-29T10:00:00Z",
        "base": {"ref": "main", "repo": {"full_name": "acme/web", "private": False}},
    }
    first = _github(server, "pull_request", {"action": "opened", "pull_request": pull}, "d-once")
    again = _github(server, "pull_request", {"action": "opened", "pull_request": pull}, "d-once")
    assert "ingested" in first.json() and again.json() == {"ignored": "duplicate delivery"}


def test_a_stale_slack_timestamp_is_refused(server):
    body = json.dumps({"type": "event_callback", "event": {"type": "message", "text": "x", "ts": "1.1"}}).encode()
    stamp = str(int(time.time()) - 600)
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    response = httpx.post(
        f"{server.url}/ingest/slack",
        content=body,
        timeout=30,
        headers={"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature},
    )
    assert response.status_code == 401

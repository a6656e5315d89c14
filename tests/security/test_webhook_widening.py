"""Class 4: webhooks narrow, never widen, and replays are inert. Every attack is a properly signed
delivery to the real HTTP app; what counts is the access list the store then holds."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from context_engine.config import Settings
from context_engine.server import ApiKey, create_app
from tests.serving import Server, signed_github, signed_slack, stored_record

SECRET = "widening-test-secret"
PUBLIC_CHANNEL = "C02WEBFE5N"  # #web in the sample: stored ["*"]
PRIVATE_CHANNEL = "G04SECPR9Z"  # #security-private: stored as its members
MEMBERS = ["slack:U02BA4E0B7", "slack:U02DBE6A14", "slack:U046FF71DB", "slack:U0845B55B7", "slack:U0DCC75DEF"]


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def data_dir(sample_dir, tmp_path_factory):
    copy = tmp_path_factory.mktemp("widening") / "data"
    shutil.copytree(sample_dir, copy)
    return copy


@pytest.fixture(scope="module")
def server(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, {"k": ApiKey(tenant="acme")})) as running:
        yield running


def _acl(data_dir, collection: str, ref: str) -> list[str] | None:
    record = stored_record(data_dir, collection, ref)
    return None if record is None else record["acl"]


def _slack(server, payload: dict) -> httpx.Response:
    response = signed_slack(server.url, SECRET, json.dumps(payload).encode())
    assert response.status_code == 200, response.text
    return response


def _message(channel: str, ts: str, **says) -> dict:
    event = {"type": "message", "channel": channel, "user": "U0DCC75DEF", "text": f"note {ts}", "ts": ts, **says}
    return {"type": "event_callback", "event_id": f"Ev{ts}", "event": event}


def _github_body(payload: dict) -> bytes:
    return json.dumps(payload).encode()


def _github(server, body: bytes, delivery: str, event: str = "pull_request") -> httpx.Response:
    response = signed_github(server.url, SECRET, body, event, delivery)
    assert response.status_code == 200, response.text
    return response


def _pull(number: int, private: bool, updated_at: str, **extra) -> dict:
    return {
        "id": 770000 + number,
        "number": number,
        "title": f"Change {number}",
        "body": "details",
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-28T09:00:00Z",
        "updated_at": updated_at,
        "html_url": f"https://github.com/acme/infra/pull/{number}",
        "head": {"ref": f"change-{number}"},
        "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": private}},
        **extra,
    }


def _event(pull: dict, action: str = "opened") -> dict:
    return {
        "action": action,
        "pull_request": pull,
        "repository": {"full_name": "acme/infra", "private": pull["base"]["repo"]["private"]},
    }


# -- Slack: the event's own statement of privacy wins over a stored public list ----------------------


@pytest.mark.parametrize(
    "ts, says",
    [
        ("1796400001.000100", {"channel_type": "group"}),
        ("1796400002.000100", {"channel_type": "im"}),
        ("1796400003.000100", {"channel_type": "mpim"}),
        ("1796400004.000100", {"channel_type": "channel", "is_private": True}),
    ],
    ids=["group", "im", "mpim", "is_private"],
)
def test_a_slack_event_saying_private_never_takes_the_channels_stored_public_list(server, data_dir, ts, says):
    _slack(server, _message(PUBLIC_CHANNEL, ts, **says))
    assert _acl(data_dir, "messages", f"{PUBLIC_CHANNEL}:{ts}") == []  # nobody: an event never lists members


def test_a_slack_event_saying_private_keeps_only_the_stored_members(server, data_dir):
    _slack(server, _message(PRIVATE_CHANNEL, "1796500000.000100", channel_type="group"))
    assert _acl(data_dir, "messages", f"{PRIVATE_CHANNEL}:1796500000.000100") == MEMBERS


def test_a_slack_event_saying_public_never_widens_a_stored_private_channel(server, data_dir):
    _slack(server, _message(PRIVATE_CHANNEL, "1796500001.000100", channel_type="channel"))
    assert _acl(data_dir, "messages", f"{PRIVATE_CHANNEL}:1796500001.000100") == MEMBERS


@pytest.mark.parametrize(
    "channel, ts",
    [("C02MOBIL6R", "1796500002.000100"), ("C0NEVERSEEN", "1796500003.000100")],
    ids=["stored-public", "never-seen"],
)
def test_a_slack_event_in_a_public_channel_is_public(server, data_dir, channel, ts):
    # the allowed case, so the narrowing above is not just "everything is nobody" (#web is not used
    # here: the private statements above made its newest message, and so its stored list, nobody's)
    _slack(server, _message(channel, ts, channel_type="channel"))
    assert _acl(data_dir, "messages", f"{channel}:{ts}") == ["*"]


def test_a_slack_body_already_applied_is_inert_whatever_its_delivery(server, data_dir):
    payload = _message(PUBLIC_CHANNEL, "1796500004.000100", channel_type="channel")
    del payload["event_id"]  # no id to deduplicate by: the content is what was applied
    assert "ingested" in _slack(server, payload).json()
    assert _slack(server, payload).json() == {"ignored": "duplicate content"}


# -- GitHub: replays are inert, equal timestamps never widen, a webhook never reopens ---------------


def test_an_old_delivery_replayed_under_a_new_id_does_not_undo_an_authoritative_narrowing(server, data_dir):
    from context_engine.ingest import ingest
    from context_engine.sources.github import with_visibility

    stamp = "2026-11-29T10:00:00Z"
    opened = _github_body(_event(_pull(8101, private=False, updated_at=stamp)))
    _github(server, opened, "d-8101-open")
    assert _acl(data_dir, "pull_requests", "acme/infra#8101") == ["*"]
    # An authoritative dump, at the same `updated_at`, says the repository is private.
    ingest(
        Settings(data_dir=data_dir, mongodb_uri=None),
        {"acme": {"pull_requests": [with_visibility(_pull(8101, private=True, updated_at=stamp))]}},
        index=False,
    )
    assert _acl(data_dir, "pull_requests", "acme/infra#8101") == []
    # The old signed body again, under a delivery id never seen (the id is not signed).
    assert _github(server, opened, "d-8101-replayed").json() == {"ignored": "duplicate content"}
    assert _acl(data_dir, "pull_requests", "acme/infra#8101") == []


def test_a_delivery_with_an_equal_timestamp_never_widens(server, data_dir):
    from context_engine.ingest import ingest
    from context_engine.sources.github import with_visibility

    stamp = "2026-11-29T11:00:00Z"
    ingest(
        Settings(data_dir=data_dir, mongodb_uri=None),
        {"acme": {"pull_requests": [with_visibility(_pull(8102, private=True, updated_at=stamp))]}},
        index=False,
    )
    # Another genuine delivery of the same version of the PR (a different body) that says public.
    relabeled = _github_body(
        _event(_pull(8102, private=False, updated_at=stamp, labels=[{"name": "infra"}]), action="labeled")
    )
    applied = _github(server, relabeled, "d-8102-labeled").json()
    assert applied["ingested"]["collections"]["pull_requests"]["updated"] == 1  # its content does apply
    assert _acl(data_dir, "pull_requests", "acme/infra#8102") == []


def test_a_newer_delivery_never_reopens_what_an_authoritative_source_closed(server, data_dir):
    from context_engine.ingest import ingest
    from context_engine.sources.github import with_visibility

    ingest(
        Settings(data_dir=data_dir, mongodb_uri=None),
        {"acme": {"pull_requests": [with_visibility(_pull(8103, private=True, updated_at="2026-11-29T12:00:00Z"))]}},
        index=False,
    )
    later = _github_body(_event(_pull(8103, private=False, updated_at="2026-11-30T12:00:00Z"), action="edited"))
    _github(server, later, "d-8103-later")
    assert _acl(data_dir, "pull_requests", "acme/infra#8103") == []


def test_a_github_event_saying_private_narrows_a_public_record(server, data_dir):
    _github(server, _github_body(_event(_pull(8104, private=False, updated_at="2026-11-29T13:00:00Z"))), "d-8104-a")
    assert _acl(data_dir, "pull_requests", "acme/infra#8104") == ["*"]
    private = _github_body(_event(_pull(8104, private=True, updated_at="2026-11-29T14:00:00Z"), action="edited"))
    _github(server, private, "d-8104-b")
    assert _acl(data_dir, "pull_requests", "acme/infra#8104") == []
    # and an older delivery saying public, replayed later, changes nothing
    older = _github_body(_event(_pull(8104, private=False, updated_at="2026-11-29T13:30:00Z"), action="edited"))
    assert _github(server, older, "d-8104-c").json() == {"ignored": "older than what is stored"}
    assert _acl(data_dir, "pull_requests", "acme/infra#8104") == []

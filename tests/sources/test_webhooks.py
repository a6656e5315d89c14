"""Webhook events as records, in the sources layer: given the store as it is (or none yet), never wider
than what is stored, every list partial."""

from context_engine.access import PUBLIC
from context_engine.sources.normalize import ACL_PARTIAL
from context_engine.sources.webhooks import channel_acl, github_batches, member_left, newer_than_stored, slack_message

PULL = {
    "id": 991,
    "number": 7,
    "title": "Tune the quorvex cache",
    "state": "open",
    "user": {"login": "rsh-dev"},
    "created_at": "2026-11-29T09:00:00Z",
    "updated_at": "2026-11-29T09:00:00Z",
    "html_url": "https://github.com/acme/infra/pull/7",
    "base": {"ref": "main", "repo": {"full_name": "acme/infra"}},
}


def _event(channel_type: str | None, channel: str = "C-NEW") -> dict:
    event = {"type": "message", "channel": channel, "user": "U1", "text": "hello", "ts": "1764500000.000100"}
    return {"type": "event_callback", "event": {**event, **({"channel_type": channel_type} if channel_type else {})}}


def test_before_anything_is_stored_an_event_says_only_what_it_states():
    private = github_batches(
        None,
        "acme",
        "pull_request",
        {"action": "opened", "pull_request": PULL, "repository": {"full_name": "acme/infra", "private": True}},
    )
    assert private["pull_requests"][0]["acl"] == [] and private["pull_requests"][0][ACL_PARTIAL] is True
    unstated = github_batches(None, "acme", "pull_request", {"action": "opened", "pull_request": PULL})
    assert "acl" not in unstated["pull_requests"][0]  # no visibility stated: ingest keeps what is stored, or nobody
    assert github_batches(None, "acme", "star", {"action": "created"}) is None
    assert newer_than_stored(None, "acme", private) == private
    # Slack: public only when the event says so; private or unsaid is nobody, never the tenant
    assert slack_message(None, "acme", _event("channel"))["acl"] == [PUBLIC]
    assert slack_message(None, "acme", _event("group"))["acl"] == []
    assert slack_message(None, "acme", _event(None))["acl"] == []
    assert (
        member_left(
            None,
            "acme",
            {"type": "event_callback", "event": {"type": "member_left_channel", "channel": "C1", "user": "U1"}},
        )
        == []
    )
    assert channel_acl(None, "acme", "C1") is None


def test_with_a_store_an_event_never_widens_a_channel(settings):
    from context_engine.resources import store_for

    store = store_for(settings)
    private = next(
        d for d in store.collection("messages").find({"tenant_id": "acme"}) if d.get("acl") and PUBLIC not in d["acl"]
    )
    stored = channel_acl(store, "acme", private["channel_id"])
    assert stored and PUBLIC not in stored
    # an event calling the channel public keeps the stored members, never `*`
    said_public = slack_message(store, "acme", _event("channel", private["channel_id"]))
    assert said_public["acl"] == stored and said_public[ACL_PARTIAL] is True
    assert channel_acl(store, "globex", private["channel_id"]) is None  # another tenant's channel is unknown here

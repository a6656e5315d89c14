"""Webhook deliveries turned into records: what a signed GitHub or Slack event says, as the records
`ingest` writes (the server's webhook routes verify signatures and call these).

Every function takes the tenant's store as it is now (None when nothing is stored yet) instead of
reaching for one: this module is in the sources layer and never imports the resources or ingest.
Every access list written here is partial (`ACL_PARTIAL`): a webhook narrows, never widens.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from context_engine.access import PUBLIC, principal
from context_engine.sources.github import is_pull_request, visibility_acl
from context_engine.sources.normalize import ACL_PARTIAL, normalize, source_fields
from context_engine.store.documents import DocumentStore, record_id, strip_hidden

# Events API `channel_type`s that say the channel is private: a private channel, a DM, a group DM.
SLACK_PRIVATE_CHANNEL_TYPES = ("group", "im", "mpim")
# `issues` and `repository` actions after which it is no longer in the repository that delivered it.
GITHUB_REMOVALS = ("deleted", "transferred")


def newer_than_stored(
    store: DocumentStore | None, tenant: str, batches: dict[str, list[dict]]
) -> dict[str, list[dict]]:
    """Only the records at least as new (`updated_at`) as what is stored: an old delivery replayed
    later cannot turn a merged PR back into an open one. One as new as what is stored (a review on an
    unchanged PR) is applied, and like every webhook record its access list may only narrow the
    stored one (`github_batches`), so an equal timestamp never widens."""

    if store is None:
        return batches
    out = {}
    for collection, records in batches.items():
        incoming = [(record, normalize(collection, record)) for record in records]
        stored = {
            d["ref"]: d.get("updated_at")
            for d in store.find_refs(collection, {"tenant_id": tenant}, [n["ref"] for _, n in incoming])
        }
        out[collection] = [
            record
            for record, norm in incoming
            if not (
                isinstance(stored.get(norm["ref"]), datetime)
                and isinstance(norm.get("updated_at"), datetime)
                and norm["updated_at"] < stored[norm["ref"]]
            )
        ]
    return out


def github_batches(
    store: DocumentStore | None, tenant: str, event: str, payload: dict[str, Any]
) -> dict[str, list[dict]] | None:
    """The records a GitHub webhook delivers: the PR (pull_request, pull_request_review) or the issue
    (issues; a PR seen as an issue goes to pull_requests). None for events we do not store.

    Access: the event's repository states its visibility (`private: true`: nobody until collaborators
    are known; false: everyone). That statement is applied as a narrowing (`ACL_PARTIAL`): it makes a
    new record's list, and may narrow a stored one (a repository made private), never widen it. Only
    an authoritative ingest (a dump or the API) can open a record again: a webhook delivery is easy to
    replay out of order, and a dump that narrowed a record must not be undone by an older event."""

    # Without a stated visibility the record keeps what is stored (or is readable by nobody), never
    # everyone.
    if event == "pull_request":
        collection, record = "pull_requests", payload["pull_request"]
    elif event == "issues":
        record = payload["issue"]
        collection = "pull_requests" if is_pull_request(record) else "issues"
        if payload.get("action") in GITHUB_REMOVALS:
            # Gone from this repository: its text goes and nobody reads the stored record. No
            # `updated_at`, so no stored state counts as newer than the removal.
            kept = {
                k: record[k]
                for k in ("id", "number", "html_url", "repository_url", "url", "pull_request", "created_at")
                if k in record
            }
            return {collection: [{**kept, "title": "", "state": payload["action"], "acl": [], ACL_PARTIAL: True}]}
    elif event == "pull_request_review":
        collection, record = "pull_requests", with_review(store, tenant, payload["pull_request"], payload["review"])
    else:
        # `repository` `privatized` (it says private), `deleted` or `transferred` (gone from here).
        gone = event == "repository" and payload.get("action") in GITHUB_REMOVALS
        closed = closed_repository(store, tenant, payload, gone=gone)
        return closed if any(closed.values()) else None
    # Two statements (the event's repository, the record's own base repository): privacy wins.
    stated = [a for a in (visibility_acl(payload), visibility_acl(record)) if a is not None]
    acl = [] if [] in stated else stated[0] if stated else None
    record = source_fields(record)  # a delivery never speaks for the engine (`acl`, `source` ...)
    delivered = {collection: [record if acl is None else {**record, "acl": acl, ACL_PARTIAL: True}]}
    try:
        ref = normalize(collection, record)["ref"]
    except ValueError:
        return delivered  # refused in one line where every delivered record is normalised
    for name, records in closed_repository(store, tenant, payload).items():
        delivered.setdefault(name, []).extend(r for r in records if not (name == collection and r["ref"] == ref))
    return delivered


def closed_repository(
    store: DocumentStore | None, tenant: str, payload: dict[str, Any], gone: bool = False
) -> dict[str, list[dict]]:
    """Privacy is the repository's: a signed event whose `repository` says `private: true` (a
    `repository` event `privatized`, or any PR / issue / review event of a private repository) closes
    every stored record of that repository that is still open to anyone, not only the one it
    delivers; so does a `repository` event `deleted` or `transferred` (`gone`). Each is written again as stored with a partial list of nobody (it can only narrow).
    Records already closed are not written again."""

    repository = payload.get("repository")
    if not (
        isinstance(repository, dict)
        and (gone or repository.get("private") is True)
        and isinstance(repository.get("full_name"), str)
        and repository["full_name"]
    ):
        return {}
    if store is None:
        return {}
    name = repository["full_name"].lower()  # GitHub compares repository names without case
    out: dict[str, list[dict]] = {}
    for collection in ("pull_requests", "issues"):
        out[collection] = [
            {**strip_hidden(doc), "acl": [], ACL_PARTIAL: True}
            for doc in store.collection(collection).find({"tenant_id": tenant, "acl": {"$ne": []}})
            if isinstance(doc.get("repo"), str) and doc["repo"].lower() == name
        ]
    return out


def with_review(
    store: DocumentStore | None, tenant: str, pull: dict[str, Any], review: dict[str, Any]
) -> dict[str, Any]:
    """The PR with its stored reviews plus this one (the review payload's PR carries no reviews)."""

    ref = normalize("pull_requests", pull)["ref"]
    stored = None if store is None else store.collection("pull_requests").find_one({"_id": record_id(tenant, ref)})
    reviews = [r for r in (stored or {}).get("reviews", []) if r.get("id") != review.get("id")]
    return {**pull, "reviews": reviews + [review]}


def slack_message(store: DocumentStore | None, tenant: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """A stored message record from an Events API `event_callback` of a plain `message`, or of a
    `message_deleted` (`deleted_message`: the stored message closed); None for anything else (other
    events, edits, bot and system subtypes).

    Access, never wider than what is stored for the channel (its newest message's list):
    - the event says the channel is private (`channel_type` group, im or mpim, or `is_private`): the
      stored list when it names members, nobody when it is public or unknown (an event never lists
      members, and a channel made private must not keep its public list);
    - the event says it is a public channel (`channel_type: channel`): the stored list, or the whole
      tenant for a channel never seen;
    - it says neither: the stored list, else nobody.
    The list is marked partial: a re-delivery can only narrow what is stored for the message itself.
    """

    event = payload.get("event") or {}
    if payload.get("type") != "event_callback" or event.get("type") != "message":
        return None
    if event.get("subtype") == "message_deleted":
        return deleted_message(store, tenant, event)
    if event.get("subtype"):
        return None
    record = {k: event[k] for k in ("type", "user", "text", "ts", "thread_ts") if k in event}
    record["channel_id"] = event.get("channel")
    stored = channel_acl(store, tenant, record["channel_id"])
    if event.get("channel_type") in SLACK_PRIVATE_CHANNEL_TYPES or event.get("is_private") is True:
        record["acl"] = [] if stored is None or PUBLIC in stored else stored
    elif event.get("channel_type") == "channel":
        record["acl"] = [PUBLIC] if stored is None else stored
    else:
        record["acl"] = stored or []
    record[ACL_PARTIAL] = True  # an event never widens what is stored; only an export states membership
    return record


def member_left(store: DocumentStore | None, tenant: str, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A `member_left_channel` event: the member no longer reads the channel, so every stored message
    of it that names them loses them (a partial list: it only narrows; a public channel's `*` is the
    whole tenant's and stays). None for any other event."""

    event = payload.get("event") or {}
    if payload.get("type") != "event_callback" or event.get("type") != "member_left_channel":
        return None
    channel, user = event.get("channel"), event.get("user")
    if not isinstance(channel, str) or not isinstance(user, str) or not user:
        return []
    member = principal("slack", user)
    if store is None:
        return []
    stored = store.collection("messages").find({"tenant_id": tenant, "channel_id": channel, "acl": member})
    return [{**strip_hidden(doc), "acl": [p for p in doc["acl"] if p != member], ACL_PARTIAL: True} for doc in stored]


def deleted_message(store: DocumentStore | None, tenant: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """A `message_deleted` event as the stored message closed: its text gone, readable by nobody
    (partial: it only narrows). It keeps its place in its thread, so the thread's unit of index text,
    which may still hold the deleted text, is served to nobody (`hybrid.LiveAccess`). None when no such
    message is stored."""

    channel, ts = event.get("channel"), event.get("deleted_ts")
    if not isinstance(channel, str) or not isinstance(ts, str):
        return None
    if store is None:
        return None
    stored = store.find_refs("messages", {"tenant_id": tenant}, [f"{channel}:{ts}"])
    if not stored:
        return None
    record = {
        "type": "message",
        "channel_id": channel,
        "ts": ts,
        "text": "",
        "deleted": True,
        "acl": [],
        ACL_PARTIAL: True,
    }
    if isinstance(stored[0].get("thread_ts"), str):
        record["thread_ts"] = stored[0]["thread_ts"]
    return record


def channel_acl(store: DocumentStore | None, tenant: str, channel_id: Any) -> list[str] | None:
    """The access list stored for a Slack channel's newest message; None when no message of it is
    stored ([] is a channel known to be readable by nobody)."""

    if store is None or not isinstance(channel_id, str):
        return None
    # A deleted message's tombstone (readable by nobody) says nothing about the channel.
    newest = (
        store.collection("messages")
        .find({"tenant_id": tenant, "channel_id": channel_id, "deleted": {"$ne": True}}, {"acl": 1})
        .sort("ts", -1)
        .limit(1)
    )
    return next((list(d.get("acl") or []) for d in newest), None)

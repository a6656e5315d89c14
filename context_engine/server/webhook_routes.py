"""The signed ingest webhooks: `POST /ingest/github` and `/ingest/slack` verify the service's
signature, apply each delivery once (by id and by content), and commit what it says at once; the
translation from event to records is the service's (`sources.webhooks`), the indexing the background indexer's."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from context_engine import service
from context_engine.config import Settings
from context_engine.server.http_errors import json_error
from context_engine.server.indexer import BackgroundIndexer

GITHUB_SECRET_ENV = "GITHUB_WEBHOOK_SECRET"
SLACK_SECRET_ENV = "SLACK_SIGNING_SECRET"
SLACK_MAX_SKEW_SECONDS = 300  # Slack's own advice: reject replays older than five minutes
WEBHOOK_PREFIX = "/ingest/"


def unsigned(
    secret_env: str, service: str, signed: bytes, prefix: str, request: Request, header: str
) -> JSONResponse | None:
    """The error response for a webhook call not signed with the service's secret (HMAC-SHA256 of
    `signed`, hex, after `prefix`, in `header`); None when the signature is right."""
    secret = os.environ.get(secret_env, "")
    if not secret:
        return json_error(503, f"{service} webhooks are off: ${secret_env} is not set")
    expected = prefix + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    # Headers arrive as latin-1 text: compared as bytes, a non-ASCII signature is a 401, not a 500.
    given = request.headers.get(header.lower(), "").encode("latin-1", "replace")
    if not hmac.compare_digest(expected.encode(), given):
        return json_error(401, f"bad {header}")
    return None


class DeliveryLog:
    """Webhook delivery ids already applied, persisted (a restart does not re-apply a redelivery) and
    bounded (ids older than a week are forgotten: GitHub and Slack redeliver within hours)."""

    KEEP_SECONDS = 7 * 24 * 3600

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, at REAL NOT NULL)")
        self.lock = threading.Lock()

    def first_time(self, service: str, delivery_id: str) -> bool:
        """True once per id (an event without an id cannot be deduplicated and is applied)."""
        if not delivery_id:
            return True
        now = time.time()
        with self.lock:
            self.conn.execute("DELETE FROM seen WHERE at < ?", (now - self.KEEP_SECONDS,))
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO seen (id, at) VALUES (?, ?)", (f"{service}:{delivery_id[:200]}", now)
            )
            return cur.rowcount == 1


def add_webhook_routes(app: FastAPI, settings: Settings, indexer: BackgroundIndexer) -> None:
    """The two webhook routes, writing to `settings`' data dir and tenant."""
    ingest_lock = threading.Lock()  # one writer at a time within this process (the data dir has its own lock)
    deliveries = DeliveryLog(settings.data_dir / "webhook-deliveries.sqlite")

    def ingest_now(batches: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """Commit the records now (the answer to the webhook says what was written); their chunks are
        indexed in the background, so a burst of events never waits on embedding."""
        with ingest_lock:
            report = service.commit_records(settings, batches)
        changed = report.pop("changed")
        if changed:
            indexer.request(settings.tenant)
        return {**report, "index": "queued" if changed else "unchanged"}

    @app.post("/ingest/github")
    async def ingest_github(request: Request):
        body = await request.body()
        refused = unsigned(GITHUB_SECRET_ENV, "GitHub", body, "sha256=", request, "X-Hub-Signature-256")
        if refused:
            return refused
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            return {"ok": True}
        if not deliveries.first_time("github", request.headers.get("x-github-delivery", "")):
            return {"ignored": "duplicate delivery"}  # GitHub redelivers; each delivery is applied once
        if not deliveries.first_time("github-body", hashlib.sha256(body).hexdigest()):
            # The delivery id is a header the signature does not cover: an old signed body replayed
            # under a new id is the same content, and is applied once like any redelivery.
            return {"ignored": "duplicate content"}
        try:
            payload = json.loads(body)
            # In a worker thread: the store is read as it is at the delivery.
            batches = await run_in_threadpool(service.github_event_records, settings, event, payload)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return json_error(400, f"unusable {event or 'GitHub'} payload: {exc}")
        if batches is None:
            return {"ignored": event}
        if not any(batches.values()):
            return {"ignored": "older than what is stored"}  # a replayed or late delivery never rolls back
        return {"ingested": await run_in_threadpool(ingest_now, batches)}

    @app.post("/ingest/slack")
    async def ingest_slack(request: Request):
        body = await request.body()
        stamp = request.headers.get("x-slack-request-timestamp", "")
        refused = unsigned(
            SLACK_SECRET_ENV, "Slack", f"v0:{stamp}:".encode() + body, "v0=", request, "X-Slack-Signature"
        )
        if refused:
            return refused
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > SLACK_MAX_SKEW_SECONDS:
            return json_error(401, "missing or stale X-Slack-Request-Timestamp")  # a replayed request
        try:
            payload = json.loads(body)
        except ValueError as exc:
            return json_error(400, f"unusable Slack payload: {exc}")
        if not isinstance(payload, dict):
            return json_error(400, "unusable Slack payload: not an object")
        if payload.get("type") == "url_verification":
            return {"challenge": payload.get("challenge")}
        if not deliveries.first_time("slack", str(payload.get("event_id") or "")):
            return {"ignored": "duplicate delivery"}  # Slack retries; each event is applied once
        if not deliveries.first_time("slack-body", hashlib.sha256(body).hexdigest()):
            return {"ignored": "duplicate content"}  # the same signed event, whatever its id says
        batches = await run_in_threadpool(service.slack_event_records, settings, payload)
        if batches is None:
            return {"ignored": (payload.get("event") or {}).get("type") or payload.get("type")}
        if not batches["messages"]:  # a member left a channel none of whose messages is stored
            return {"ignored": "member_left_channel"}
        return {"ingested": await run_in_threadpool(ingest_now, batches)}

"""A real uvicorn server on a loopback port, in a thread, for tests that drive the app over HTTP."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from langserve import RemoteRunnable


class Server:
    def __init__(self, app):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)

    def client(self, key: str | None) -> RemoteRunnable:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return RemoteRunnable(f"{self.url}/context", headers=headers, timeout=60)


def signed_github(url: str, secret: str, body: bytes, event: str, delivery: str):
    """POST a GitHub webhook delivery signed with `secret` (X-Hub-Signature-256) to the server at `url`."""
    import hashlib
    import hmac

    import httpx

    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(
        f"{url}/ingest/github",
        content=body,
        timeout=60,
        headers={
            "X-GitHub-Event": event,
            "X-Hub-Signature-256": signature,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
        },
    )


def signed_slack(url: str, secret: str, body: bytes):
    """POST a Slack Events API request signed with `secret` (v0 signature, timestamp now) to `url`."""
    import hashlib
    import hmac

    import httpx

    stamp = str(int(time.time()))
    signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return httpx.post(
        f"{url}/ingest/slack",
        content=body,
        timeout=60,
        headers={
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
            "Content-Type": "application/json",
        },
    )


def stored_record(data_dir, collection: str, ref: str, tenant: str = "acme") -> dict | None:
    """The record of `ref` as the data dir's store holds it now (hidden fields included), or None."""
    from context_engine.config import Settings
    from context_engine.store.documents import open_store, record_id

    return (
        open_store(Settings(data_dir=data_dir, mongodb_uri=None))
        .collection(collection)
        .find_one({"_id": record_id(tenant, ref)})
    )

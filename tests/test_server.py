"""The LangServe server, driven over real HTTP on a loopback port with `RemoteRunnable` as the client."""

import asyncio
import hashlib
import hmac
import json
import shutil
import socket
import time

import httpx
import pytest
from langserve import RemoteRunnable

from context_engine.config import Settings
from context_engine.server import ApiKey, Limits, create_app
from tests.serving import Server

NOW = "2026-11-30T12:00:00Z"
SECRET = "webhook-test-secret"
KEYS = {"acme-key": ApiKey(tenant="acme", user="priyar"), "globex-key": ApiKey(tenant="globex")}


def _pull(number: int, title: str, body: str) -> dict:
    return {"id": 990000 + number, "number": number, "title": title, "body": body, "state": "open",
            "user": {"login": "rsh-dev"}, "created_at": "2026-11-29T09:00:00Z", "updated_at": "2026-11-29T09:00:00Z",
            "html_url": f"https://github.com/acme/infra/pull/{number}",
            "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": False}}}


def _stored_pull(data_dir, number: int) -> dict | None:
    from context_engine.store.documents import open_store, record_id

    store = open_store(Settings(data_dir=data_dir, mongodb_uri=None))
    return store.collection("pull_requests").find_one({"_id": record_id("acme", f"acme/infra#{number}")})


@pytest.fixture(scope="module")
def data_dir(sample_dir, tmp_path_factory):
    # A copy: the webhooks below write to it, and other tests read the shared sample.
    copy = tmp_path_factory.mktemp("server") / "data"
    shutil.copytree(sample_dir, copy)
    return copy


@pytest.fixture(scope="module")
def server(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, KEYS, Limits(max_body_bytes=50_000, requests_per_minute=40))) as running:
        yield running


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _github(server, event: str, payload: dict, secret: str = SECRET) -> httpx.Response:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(f"{server.url}/ingest/github", content=body, timeout=60,
                      headers={"X-GitHub-Event": event, "X-Hub-Signature-256": signature,
                               "Content-Type": "application/json"})


def test_no_or_unknown_key_is_refused_before_any_work(server):
    for key in (None, "not-a-key"):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            server.client(key).invoke({"question": "how many open PRs are there?", "now": NOW})
        assert refused.value.response.status_code == 401
        assert "error" in refused.value.response.json()
    assert httpx.get(f"{server.url}/context/input_schema").status_code == 401


def test_invoke_answers_with_the_keys_tenant_and_asker(server):
    out = server.client("acme-key").invoke({"question": "open issues assigned to me", "now": NOW})
    assert {"answer", "route", "queries", "records", "citations"} <= set(out)
    # the key's user (priyar, alias of praman) is the asker, though the body names nobody
    assert out["records"] and all(r["fields"]["assignee"]["name"] == "praman" for r in out["records"])


def test_schemas_batch_and_stream_are_served(server):
    headers = {"Authorization": "Bearer acme-key"}
    schema = httpx.get(f"{server.url}/context/input_schema", headers=headers).json()
    assert set(schema["$defs"]["QuestionInput"]["properties"]) == {"question", "now"}
    output = httpx.get(f"{server.url}/context/output_schema", headers=headers).json()
    assert "answer" in output["$defs"]["Answer"]["properties"]
    client = server.client("acme-key")
    counts = client.batch([{"question": "how many open PRs are there?", "now": NOW}] * 2)
    assert counts[0]["records"] == counts[1]["records"] and counts[0]["records"][0]["count"] > 0
    nodes = {name for chunk in client.stream({"question": "how many open PRs are there?", "now": NOW})
             for name in chunk}
    assert {"route", "structured_query", "generate"} <= nodes
    async def event_kinds():
        return {e["event"] async for e in client.astream_events({"question": "how many open PRs are there?",
                                                                 "now": NOW}, version="v2")}

    events = asyncio.run(event_kinds())
    assert {"on_chain_start", "on_chain_end"} <= events
    assert httpx.get(f"{server.url}/context/playground/", headers=headers).status_code == 200


def test_a_key_sees_only_its_tenant_whatever_the_body_says(server, data_dir):
    from context_engine.runtime import forget
    from context_engine.ingest import ingest

    settings = Settings(data_dir=data_dir, mongodb_uri=None)
    marker = "quokkafrost"
    ingest(settings, {tenant: {"pull_requests": [_pull(9101, f"Roll out {marker} caching for {tenant}",
                                                        f"The {marker} rollout plan of {tenant}.")]}
                      for tenant in ("acme", "globex")}, public=True)
    forget(settings)
    question = {"question": f"what is the {marker} rollout plan?", "now": NOW}
    for key, tenant, other in (("acme-key", "acme", "globex"), ("globex-key", "globex", "acme")):
        # a client-sent tenant is ignored: the key alone decides
        out = server.client(key).invoke(question, config={"configurable": {"tenant": other}})
        titles = " ".join(c.get("title") or "" for c in out["citations"])
        assert f"{marker} caching for {tenant}" in titles and f"for {other}" not in titles


def test_forged_webhook_is_refused_and_ingests_nothing(server, data_dir):
    pull = _pull(9201, "Retire the zanderbolt queue", "Zanderbolt is replaced by the new broker.")
    forged = _github(server, "pull_request", {"action": "opened", "pull_request": pull}, secret="guessed")
    assert forged.status_code == 401 and "error" in forged.json()
    out = server.client("acme-key").invoke({"question": "why retire the zanderbolt queue?", "now": NOW})
    assert not any("zanderbolt" in (c.get("title") or "").lower() for c in out["citations"])
    assert _stored_pull(data_dir, 9201) is None


def test_signed_webhook_pr_is_answerable_right_after(server, data_dir):
    pull = _pull(9301, "Migrate billing to the plinkerton ledger", "We move billing onto the plinkerton ledger.")
    signed = _github(server, "pull_request", {"action": "opened", "pull_request": pull})
    assert signed.status_code == 200, signed.text
    assert _stored_pull(data_dir, 9301)["title"] == pull["title"]
    out = server.client("acme-key").invoke({"question": "what did the plinkerton ledger PR change?", "now": NOW})
    assert any(c.get("url") == pull["html_url"] for c in out["citations"]), out["citations"]
    review = {"id": 77, "user": {"login": "liuyang-ops"}, "state": "APPROVED", "body": "ship it",
              "submitted_at": "2026-11-29T10:00:00Z"}
    reviewed = _github(server, "pull_request_review", {"action": "submitted", "pull_request": pull, "review": review})
    assert reviewed.json()["ingested"]["collections"]["pull_requests"]["updated"] == 1
    assert signed.json()["ingested"]["index"] == "queued"  # committed now, indexed in the background
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        indexing = httpx.get(f"{server.url}/healthz").json()["indexing"]
        if not indexing["queued"] and not indexing["running"]:
            break
        time.sleep(0.5)
    assert indexing == {"queued": 0, "running": False, "failed": 0}
    from context_engine.retrievers.index import SemanticIndex

    index = SemanticIndex.load(Settings(data_dir=data_dir, mongodb_uri=None), "acme")
    assert "acme/infra#9301" in {d.metadata["doc_ref"] for d in index.search_bm25("plinkerton ledger", 5, ["*"])}


def test_a_signed_pr_no_store_can_hold_is_refused_in_one_line_not_a_server_error(server, data_dir):
    pull = {**_pull(9401, "Harden the quorvex parser", "Rejects operator keys."), "$where": "sleep(100)"}
    signed = _github(server, "pull_request", {"action": "opened", "pull_request": pull})
    assert signed.status_code == 400 and signed.json() == {"error": "field name '$where' cannot be stored"}
    assert _stored_pull(data_dir, 9401) is None


def test_slack_url_verification_and_signed_message(server):
    def post(payload: dict, secret: str = SECRET) -> httpx.Response:
        body, stamp = json.dumps(payload).encode(), str(int(time.time()))
        signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
        return httpx.post(f"{server.url}/ingest/slack", content=body, timeout=60,
                          headers={"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature})

    assert post({"type": "url_verification", "challenge": "c-123"}).json() == {"challenge": "c-123"}
    event = {"type": "message", "channel": "C03INCDT2X", "user": "U0FAD6C5AF",
             "text": "the grumblewick deploy is paused", "ts": "1764500000.000100"}
    message = {"type": "event_callback", "event": event}
    assert post(message, secret="guessed").status_code == 401
    # inserted (not unchanged) also shows the forged delivery stored nothing
    assert post(message).json()["ingested"]["collections"]["messages"]["inserted"] == 1


def test_healthz_needs_no_key_and_reports_readiness(server):
    response = httpx.get(f"{server.url}/healthz")
    assert response.status_code == 200
    health = response.json()
    assert {k: health[k] for k in ("store", "tenants", "tenants_with_records", "tenants_indexed")} == {
        "store": "ok", "tenants": 2, "tenants_with_records": 2, "tenants_indexed": 2}
    assert set(health["indexing"]) == {"queued", "running", "failed"}  # the index, apart from the store
    assert "acme" not in response.text and "globex" not in response.text  # health is public: no tenant names


def test_limits_answer_json_errors(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    limits = Limits(max_body_bytes=2_000, max_run_body_bytes=2_000, requests_per_minute=2, timeout_seconds=0.001)
    with Server(create_app(settings, KEYS, limits)) as tight:
        headers = {"Authorization": "Bearer globex-key"}
        big = httpx.post(f"{tight.url}/context/invoke", headers=headers,
                         json={"input": {"question": "x" * 5_000}})
        assert big.status_code == 413 and "error" in big.json()
        slow = httpx.post(f"{tight.url}/context/invoke", headers=headers,
                          json={"input": {"question": "how many open PRs are there?", "now": NOW}})
        assert slow.status_code == 504 and "error" in slow.json()
        limited = httpx.get(f"{tight.url}/context/input_schema", headers=headers)
        assert limited.status_code == 429 and "error" in limited.json()


def test_bad_input_is_a_json_error_not_a_stack_trace(server):
    headers = {"Authorization": "Bearer acme-key"}
    cases = [({"json": {"input": {"question": 5}}}, 422), ({"content": b"{not json"}, 422),
             ({"json": {"input": {"question": "open PRs", "now": "last blue moon"}}}, 400)]
    for request, status in cases:
        response = httpx.post(f"{server.url}/context/invoke", headers=headers, timeout=60, **request)
        assert response.status_code == status and "error" in response.json() and "Traceback" not in response.text


def test_serve_subcommand_takes_keys_from_the_environment(data_dir):
    import os
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "",
           "CONTEXT_ENGINE_API_KEYS": json.dumps({"env-key": {"tenant": "acme"}})}
    env.pop("MONGODB_URI", None)
    process = subprocess.Popen([sys.executable, "-m", "context_engine.cli", "serve", "--data-dir", str(data_dir),
                                "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        remote = RemoteRunnable(f"{url}/context", headers={"Authorization": "Bearer env-key"}, timeout=60)
        out = remote.invoke({"question": "how many open PRs are there?", "now": NOW})
        assert out["route"] == "structured" and out["records"][0]["count"] > 0
    finally:
        process.terminate()
        process.wait(10)

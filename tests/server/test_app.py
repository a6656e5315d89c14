"""The LangServe server, driven over real HTTP on a loopback port with `RemoteRunnable` as the client."""

import asyncio
import hashlib
import hmac
import json
import logging
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
    return {
        "id": 990000 + number,
        "number": number,
        "title": title,
        "body": body,
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-29T09:00:00Z",
        "updated_at": "2026-11-29T09:00:00Z",
        "html_url": f"https://github.com/acme/infra/pull/{number}",
        "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": False}},
    }


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
    with Server(create_app(settings, KEYS, Limits(max_body_bytes=50_000, requests_per_minute=400))) as running:
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
    return httpx.post(
        f"{server.url}/ingest/github",
        content=body,
        timeout=60,
        headers={"X-GitHub-Event": event, "X-Hub-Signature-256": signature, "Content-Type": "application/json"},
    )


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


HYBRID = {"question": "why did we switch the session cache to Redis?", "now": NOW}


def _merged(chunks) -> dict:
    """A stream's chunks added up as LangChain adds them: each holds what one step changed."""
    merged: dict = {}
    for chunk in chunks:
        merged.update(chunk)
    return merged


def test_every_remote_runnable_method_returns_what_the_output_schema_says(server):
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tracers.log_stream import RunLog

    headers = {"Authorization": "Bearer acme-key"}
    schema = httpx.get(f"{server.url}/context/input_schema", headers=headers).json()
    assert set(schema["$defs"]["QuestionInput"]["properties"]) == {"question", "now"}
    output = httpx.get(f"{server.url}/context/output_schema", headers=headers).json()
    fields = set(output["$defs"]["Answer"]["properties"])
    assert {"answer", "citations", "queries", "records", "messages", "documents"} <= fields
    assert httpx.get(f"{server.url}/context/config_schema", headers=headers).json().get("properties", {}) == {}

    client = server.client("acme-key")
    out = client.invoke(HYBRID)
    assert set(out) == fields  # every field the schema lists, and nothing else
    human, ai = out["messages"]  # LangChain objects, not dicts: the LangChain serialisation
    assert isinstance(human, HumanMessage) and human.content == HYBRID["question"]
    assert isinstance(ai, AIMessage) and ai.content == out["answer"] and "redis" in out["answer"].lower()
    assert out["documents"] and all(isinstance(d, Document) and d.page_content for d in out["documents"])

    first, second = client.batch([HYBRID, "how many open PRs are there?"])
    assert first["answer"] == out["answer"] and isinstance(second["messages"][-1], AIMessage)
    assert second["records"][0]["count"] > 0

    chunks = list(client.stream(HYBRID))
    # each chunk holds the output fields one step changed, and together they are the invoke output
    assert len(chunks) > 3 and all(chunk and set(chunk) <= fields for chunk in chunks)
    streamed = _merged(chunks)
    assert set(streamed) == fields and streamed["answer"] == out["answer"] and streamed["documents"] == out["documents"]
    assert [m.content for m in streamed["messages"]] == [m.content for m in out["messages"]]
    assert sum("answer" in chunk for chunk in chunks) < len(chunks)  # not the whole output each time

    async def asynchronous():
        log = None
        async for patch in client.astream_log(HYBRID):
            log = patch if log is None else log + patch
        events = [e async for e in client.astream_events(HYBRID, version="v2")]
        return (
            await client.ainvoke(HYBRID),
            [c async for c in client.astream(HYBRID)],
            (await client.abatch([HYBRID]))[0],
            log,
            events,
        )

    ainvoked, achunks, abatched, log, events = asyncio.run(asynchronous())
    assert ainvoked["answer"] == abatched["answer"] == _merged(achunks)["answer"] == out["answer"]
    # LangServe's own run log: the run's output as JSON patches, not the playground's text
    assert isinstance(log, RunLog) and log.state["final_output"]["answer"] == out["answer"]
    assert isinstance(log.state["final_output"]["messages"][-1], AIMessage)
    assert {"on_chain_start", "on_chain_stream", "on_chain_end", "on_retriever_end"} <= {e["event"] for e in events}
    assert events[-1]["event"] == "on_chain_end" and events[-1]["data"]["output"]["answer"] == out["answer"]


def test_a_stream_is_about_the_size_of_its_answer(server):
    """Node updates carry the output's fields only: before, /stream sent the working fields (hits,
    fused and reranked passages) of every step, 4x the answer for this question."""
    headers = {"Authorization": "Bearer acme-key"}
    invoked = httpx.post(f"{server.url}/context/invoke", json={"input": HYBRID}, headers=headers, timeout=60)
    streamed = httpx.post(f"{server.url}/context/stream", json={"input": HYBRID}, headers=headers, timeout=60)
    assert invoked.status_code == streamed.status_code == 200
    assert len(streamed.content) < 1.5 * len(invoked.content), (len(streamed.content), len(invoked.content))


def test_a_key_sees_only_its_tenant_whatever_the_body_says(server, data_dir):
    from context_engine.ingest import ingest
    from context_engine.resources import forget

    settings = Settings(data_dir=data_dir, mongodb_uri=None)
    marker = "quokkafrost"
    ingest(
        settings,
        {
            tenant: {
                "pull_requests": [
                    _pull(9101, f"Roll out {marker} caching for {tenant}", f"The {marker} rollout plan of {tenant}.")
                ]
            }
            for tenant in ("acme", "globex")
        },
        public=True,
    )
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
    review = {
        "id": 77,
        "user": {"login": "liuyang-ops"},
        "state": "APPROVED",
        "body": "ship it",
        "submitted_at": "2026-11-29T10:00:00Z",
    }
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
    assert signed.status_code == 400 and signed.json() == {
        "error": "unusable pull_request payload: field name '$where' cannot be stored"
    }
    assert _stored_pull(data_dir, 9401) is None


def test_slack_url_verification_and_signed_message(server):
    def post(payload: dict, secret: str = SECRET) -> httpx.Response:
        body, stamp = json.dumps(payload).encode(), str(int(time.time()))
        signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
        return httpx.post(
            f"{server.url}/ingest/slack",
            content=body,
            timeout=60,
            headers={"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature},
        )

    assert post({"type": "url_verification", "challenge": "c-123"}).json() == {"challenge": "c-123"}
    event = {
        "type": "message",
        "channel": "C03INCDT2X",
        "user": "U0FAD6C5AF",
        "text": "the grumblewick deploy is paused",
        "ts": "1764500000.000100",
    }
    message = {"type": "event_callback", "event": event}
    assert post(message, secret="guessed").status_code == 401
    # inserted (not unchanged) also shows the forged delivery stored nothing
    assert post(message).json()["ingested"]["collections"]["messages"]["inserted"] == 1


def test_healthz_needs_no_key_and_reports_readiness(server):
    response = httpx.get(f"{server.url}/healthz")
    assert response.status_code == 200
    health = response.json()
    assert {k: health[k] for k in ("store", "tenants", "tenants_with_records", "tenants_indexed")} == {
        "store": "ok",
        "tenants": 2,
        "tenants_with_records": 2,
        "tenants_indexed": 2,
    }
    assert set(health["indexing"]) == {"queued", "running", "failed"}  # the index, apart from the store
    assert "acme" not in response.text and "globex" not in response.text  # health is public: no tenant names


def test_limits_answer_json_errors(data_dir):
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    limits = Limits(max_body_bytes=2_000, max_run_body_bytes=2_000, requests_per_minute=2, timeout_seconds=0.001)
    with Server(create_app(settings, KEYS, limits)) as tight:
        headers = {"Authorization": "Bearer globex-key"}
        big = httpx.post(f"{tight.url}/context/invoke", headers=headers, json={"input": {"question": "x" * 5_000}})
        assert big.status_code == 413 and "error" in big.json()
        slow = httpx.post(
            f"{tight.url}/context/invoke",
            headers=headers,
            json={"input": {"question": "how many open PRs are there?", "now": NOW}},
        )
        assert slow.status_code == 504 and "error" in slow.json()
        limited = httpx.get(f"{tight.url}/context/input_schema", headers=headers)
        assert limited.status_code == 429 and "error" in limited.json()


def test_bad_input_is_a_json_error_not_a_stack_trace(server):
    headers = {"Authorization": "Bearer acme-key"}
    cases = [
        ({"json": {"input": {"question": 5}}}, 422),
        ({"content": b"{not json"}, 422),
        ({"json": {"input": {"question": "open PRs", "now": "last blue moon"}}}, 400),
    ]
    for route in ("invoke", "stream", "stream_log", "stream_events"):
        for request, status in cases:
            response = httpx.post(f"{server.url}/context/{route}", headers=headers, timeout=60, **request)
            assert response.status_code == status and "error" in response.json(), (route, response.text)
    batch = httpx.post(
        f"{server.url}/context/batch",
        headers=headers,
        timeout=60,
        json={"inputs": ["open PRs", {"question": "open PRs", "now": "last blue moon"}]},
    )
    assert batch.status_code == 400 and "malformed time 'last blue moon'" in batch.json()["error"]


BAD_NOW = {"question": "open PRs", "now": "last blue moon"}
BAD_TIME = {"question": "PRs merged since 0001-01-01", "now": NOW}  # refused only once the run reads it


def test_a_failed_run_is_the_same_error_on_every_method(server, caplog, request):
    """Refused before the run (a bad `now`: a 400 before any stream starts) or while running (a time
    the question names: the stream ends with LangServe's error event), the client gets the status and
    message `invoke` answers with, and the server logs no traceback."""
    client = server.client("acme-key")
    asgi = logging.getLogger("uvicorn.error")  # where an exception escaping the app is logged; it does not propagate
    asgi.addHandler(caplog.handler)
    request.addfinalizer(lambda: asgi.removeHandler(caplog.handler))

    async def failures(question):
        calls = {
            "ainvoke": lambda: client.ainvoke(question),
            "abatch": lambda: client.abatch([question]),
            "astream": lambda: _drain(client.astream(question)),
            "astream_log": lambda: _drain(client.astream_log(question)),
            "astream_events": lambda: _drain(client.astream_events(question, version="v2")),
        }
        out = {}
        for name, call in calls.items():
            with pytest.raises(httpx.HTTPStatusError) as failed:
                await call()
            out[name] = _status_and_text(failed.value)
        return out

    for question, message in (
        (BAD_NOW, "malformed time 'last blue moon'"),
        (BAD_TIME, "the time 'since 0001-01-01' (0001-01-01) is out of range"),
    ):
        syncs = {}
        for name, call in {
            "invoke": lambda q=question: client.invoke(q),
            "batch": lambda q=question: client.batch([q]),
            "stream": lambda q=question: list(client.stream(q)),
        }.items():
            with pytest.raises(httpx.HTTPStatusError) as failed:
                call()
            syncs[name] = _status_and_text(failed.value)
        seen = {**syncs, **asyncio.run(failures(question))}
        assert {status for status, _ in seen.values()} == {400}, seen
        # (RemoteRunnable does not read the body of a stream refused before it starts: the message of a
        # bad `now` reaches a stream's client as the JSON body test_bad_input_is_a_json_error reads.)
        told = {name for name, (_, text) in seen.items() if message in text}
        assert told == set(seen) - (
            {"stream", "astream", "astream_log", "astream_events"} if question is BAD_NOW else set()
        ), seen
    assert not [r for r in caplog.records if r.exc_info or "Exception in ASGI application" in r.getMessage()]


def _status_and_text(error: httpx.HTTPStatusError) -> tuple[int, str]:
    try:
        return error.response.status_code, error.response.text
    except httpx.ResponseNotRead:  # a stream refused before it started: the client did not read the body
        return error.response.status_code, str(error)


async def _drain(stream):
    return [item async for item in stream]


def test_docs_and_openapi_are_public_schemas_without_data(server):
    spec = httpx.get(f"{server.url}/openapi.json")
    assert spec.status_code == 200
    assert {
        "/context/invoke",
        "/context/batch",
        "/context/stream",
        "/context/stream_log",
        "/context/stream_events",
    } <= set(spec.json()["paths"])
    assert "acme" not in spec.text and "globex" not in spec.text and "priyar" not in spec.text
    docs = httpx.get(f"{server.url}/docs")
    assert docs.status_code == 200 and "/openapi.json" in docs.text
    # the API itself still wants a key
    assert httpx.post(f"{server.url}/context/invoke", json={"input": "open PRs"}).status_code == 401


def test_serve_subcommand_takes_keys_from_the_environment(data_dir):
    import os
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "OPENAI_BASE_URL": "",
        "OPENAI_API_KEY": "",
        "CONTEXT_ENGINE_API_KEYS": json.dumps({"env-key": {"tenant": "acme"}}),
    }
    env.pop("MONGODB_URI", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "context_engine.cli", "serve", "--data-dir", str(data_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
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

"""`langgraph dev` (the LangGraph Studio API) serves langgraph.json offline and runs the graph through the SDK."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-11-30T12:00:00Z"
# What `make studio` sets: no analytics, no PyPI version check, no LangSmith tracing.
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def studio_url(sample_dir, tmp_path_factory):
    port = free_port()
    env = {**os.environ, **OFFLINE_ENV, "CONTEXT_ENGINE_HOME": str(sample_dir), "OPENAI_BASE_URL": "",
           "OPENAI_API_KEY": ""}
    env.pop("MONGODB_URI", None)
    # A scratch working directory: the dev server writes its state (.langgraph_api/) there.
    workdir = tmp_path_factory.mktemp("studio")
    log = (workdir / "server.log").open("w")
    server = subprocess.Popen([str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser", "--no-reload",
                               "--host", "127.0.0.1", "--port", str(port), "--config", str(ROOT / "langgraph.json")],
                              cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (workdir / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "langgraph dev did not become ready in 60 s"
            time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def client(studio_url):
    return get_sync_client(url=studio_url)


def assistant_ids(client) -> dict[str, str]:
    return {a["graph_id"]: a["assistant_id"] for a in client.assistants.search()}


def test_serves_every_graph_in_langgraph_json(client):
    assert set(assistant_ids(client)) == {"context_engine", "structured_query", "ask"}


def test_full_graph_shows_its_nodes_retry_edges_and_the_structured_subgraph(client):
    main = assistant_ids(client)["context_engine"]
    assert list(client.assistants.get_subgraphs(main)) == ["structured_query"]
    drawing = client.assistants.get_graph(main, xray=True)
    nodes = {n["id"] for n in drawing["nodes"]}
    assert {"route", "retrieve", "fuse", "rerank", "compress", "generate", "reflect"} <= nodes
    assert {"structured_query:generate_query", "structured_query:validate_query",
            "structured_query:execute_query"} <= nodes
    # Both retry edges are visible: reflect -> retrieve and the validator back to the query planner.
    edges = {(e["source"], e["target"]) for e in drawing["edges"]}
    assert {("reflect", "retrieve"), ("structured_query:validate_query", "structured_query:generate_query")} <= edges


def test_question_streams_node_updates_and_leaves_thread_state(client):
    thread = client.threads.create()
    updates = [chunk.data for chunk in client.runs.stream(
        thread["thread_id"], "context_engine",
        input={"question": "why did we switch the session cache to Redis?", "now": NOW},
        context={"tenant": "acme"}, stream_mode="updates") if chunk.event == "updates"]
    nodes = [node for update in updates for node in update]
    assert nodes[0] == "route"
    assert {"retrieve", "fuse", "rerank", "generate", "reflect"} <= set(nodes)
    assert nodes.index("retrieve") < nodes.index("generate") < nodes.index("reflect")

    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == []
    values = state["values"]
    assert values["route"] == updates[0]["route"]["route"] == "semantic"
    assert "Redis" in values["answer"]
    assert any("ENG-231" in str(c) or "ADR-007" in str(c) for c in values["citations"])


def test_string_entry_point_answers_a_structured_question(client):
    thread = client.threads.create()
    result = client.runs.wait(thread["thread_id"], "ask", input="how many open PRs are labelled security?",
                              context={"tenant": "acme"})
    assert result["route"] == "structured"
    assert result["queries"] and result["records"]

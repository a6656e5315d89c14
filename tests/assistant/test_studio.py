"""LangGraph Studio's local API (`langgraph dev`, what `make studio` runs) driven with the official
`langgraph_sdk` client: assistants, a thread, streamed node updates, chat input, state history."""

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).with_name("langgraph")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli is not installed (the studio extra)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def studio(sample_dir, tmp_path_factory):
    """Plain `langgraph dev` from the repository root, reading the sample corpus."""
    port = _free_port()
    env = {
        **os.environ,
        "CONTEXT_ENGINE_HOME": str(sample_dir),
        "CONTEXT_ENGINE_USE_LLM": "0",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
    }
    log = tmp_path_factory.mktemp("studio") / "langgraph-dev.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev did not come up: {log.read_text()[-2000:]}")
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        shutil.rmtree(ROOT / ".langgraph_api", ignore_errors=True)


def test_studio_serves_the_graph_on_threads_with_streamed_node_updates(studio):
    from langgraph_sdk import get_client

    async def session():
        client = get_client(url=studio)
        assistants = await client.assistants.search(graph_id="context_engine")
        assert assistants, "the graph of langgraph.json is served"
        assistant = assistants[0]["assistant_id"]
        drawn = await client.assistants.get_graph(assistant, xray=True)
        names = {n["id"].split(":")[-1] for n in drawn["nodes"]}
        assert {"route", "retrieve", "generate", "execute_query"} <= names
        # The assistant's form: the user-facing context fields, each typed and described; no test hooks.
        form = (await client.assistants.get_schemas(assistant))["context_schema"]["properties"]
        assert {"tenant", "user", "model", "planner_model"} <= set(form)
        assert not {"planner", "always_llm", "base_settings"} & set(form)
        assert all(p.get("type") in {"string", "boolean"} and p.get("description") for p in form.values())
        thread = await client.threads.create()
        nodes = []
        async for part in client.runs.stream(
            thread["thread_id"],
            assistant,
            stream_mode="updates",
            input={
                "messages": [{"role": "user", "content": "PRs Rashid merged last week"}],
                "now": "2026-11-30T12:00:00Z",
            },
            context={"user": "rsh-dev"},
        ):
            if part.event == "updates":
                nodes.extend(part.data)
        assert nodes[:2] == ["start_turn", "route"] and "structured_query" in nodes and nodes[-1] == "respond"
        # The chat view's follow-up, on the same thread.
        await client.runs.wait(
            thread["thread_id"],
            assistant,
            context={"user": "rsh-dev"},
            input={"messages": [{"role": "user", "content": "and in October?"}], "now": "2026-11-30T12:00:00Z"},
        )
        state = await client.threads.get_state(thread["thread_id"])
        values = state["values"]
        assert values["question"] == "PRs Rashid merged in October 2026"  # the year of the window before
        assert [m["type"] for m in values["messages"]] == ["human", "ai", "human", "ai"]
        assert values["messages"][-1]["content"].startswith("Found ")
        history = await client.threads.get_history(thread["thread_id"], limit=100)
        assert len(history) > 10 and any(h["next"] == ["route"] for h in history)
        return True

    assert asyncio.run(session())

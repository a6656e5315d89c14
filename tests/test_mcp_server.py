"""The MCP server driven by the official MCP client: over stdio (a spawned `context-engine mcp`) and
over streamable HTTP on loopback, with the same tenant and access scoping as everything else."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from context_engine.config import Settings
from context_engine.mcp_server import http_app, server_version
from context_engine.server import ApiKey
from tests.serving import Server

TOOLS = {"ask", "query", "search", "get_record", "find_people", "schema", "feedback"}
PRIVATE = [{"$match": {"channel": "security-private"}}, {"$count": "n"}]
KEYS = {
    "member-key": ApiKey(tenant="acme", user="sokafor"),
    "outsider-key": ApiKey(tenant="acme", user="zwei-dev"),
    "globex-key": ApiKey(tenant="globex"),
    "public-key": ApiKey(tenant="acme"),
}


def _stdio(sample_dir, *flags: str):
    env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    env.pop("CONTEXT_ENGINE_USER", None)
    return stdio_client(
        StdioServerParameters(
            command=sys.executable,
            env=env,
            args=["-m", "context_engine.cli", "mcp", "--data-dir", str(sample_dir), *flags],
        )
    )


async def _session_calls(transport, calls):
    async with transport as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return [await call(session) for call in calls]


async def _server_info(session):
    return session.server_info


def _count(result) -> int:
    assert not result.is_error, result.content
    rows = result.structured_content["rows"]
    return rows[0]["n"] if rows else 0


def test_stdio_lists_and_calls_every_tool(sample_dir):
    async def run():
        return await _session_calls(
            _stdio(sample_dir, "--tenant", "acme", "--as", "rsh-dev"),
            [
                lambda s: s.list_tools(),
                lambda s: s.call_tool(
                    "ask", {"question": "how many open PRs are labelled security?", "now": "2026-11-30T12:00:00Z"}
                ),
                lambda s: s.call_tool(
                    "query",
                    {"collection": "pull_requests", "pipeline": [{"$match": {"state": "open"}}, {"$count": "n"}]},
                ),
                lambda s: s.call_tool(
                    "query", {"collection": "pull_requests", "pipeline": [{"$match": {"$where": "1"}}]}
                ),
                lambda s: s.call_tool("search", {"query": "why did we switch the session cache to Redis?", "k": 3}),
                lambda s: s.call_tool("get_record", {"ref": "acme/infra#812"}),
                lambda s: s.call_tool("find_people", {"name": "Rashid Khan"}),
                lambda s: s.call_tool("schema", {"collection": "pull_requests"}),
                lambda s: s.list_resource_templates(),
                lambda s: s.read_resource("schema://issues"),
                lambda s: s.get_prompt("context_for_change", {"task": "switch the session cache to Redis"}),
                lambda s: s.call_tool(
                    "query",
                    {
                        "collection": "pull_requests",
                        "pipeline": [{"$match": {}}, {"$project": {"title": 1}}],
                        "offset": 50,
                    },
                ),
                _server_info,
            ],
        )

    (tools, ask, count, rejected, search, record, people, schema, templates, resource, prompt, page, info) = (
        asyncio.run(run())
    )
    # the spawned server names itself with the installed distribution's version, never an empty one
    assert info.name == "context-engine" and info.version == server_version() and info.version not in ("", "unknown")
    assert {t.name for t in tools.tools} == TOOLS
    assert all(t.description and len(t.description) > 60 for t in tools.tools)
    assert not ask.is_error and ask.structured_content["queries"][0]["collection"] == "pull_requests"
    assert _count(count) > 0
    assert rejected.is_error and "$where is not allowed" in rejected.content[0].text
    hits = search.structured_content["results"]
    assert not search.is_error and len(hits) == 3 and "acme/infra#812" in {h["ref"] for h in hits}
    assert all(h["snippet"] and h["url"] for h in hits)
    linked = {r["ref"] for r in record.structured_content["linked"]}
    assert record.structured_content["record"]["title"].startswith("Switch session cache") and "ENG-231" in linked
    assert "tenant_id" not in json.dumps(record.structured_content) and "acl" not in record.structured_content["record"]
    assert people.structured_content["people"][0]["github"] == "rsh-dev"
    assert "labels.name" in schema.structured_content["collections"]["pull_requests"]
    assert [t.uri_template for t in templates.resource_templates] == ["schema://{collection}"]
    assert "collection issues" in resource.contents[0].text
    assert "acme/infra#812" in prompt.messages[0].content.text
    assert len(page.structured_content["rows"]) == 50 and page.structured_content["total"] == 200


def test_feedback_rates_the_callers_last_ask_and_refuses_a_bad_plan(sample_dir, tmp_path):
    import shutil

    from context_engine.query.feedback import FeedbackStore

    data_dir = tmp_path / "data"
    shutil.copytree(sample_dir, data_dir)
    for old in data_dir.glob("feedback.sqlite*"):  # the asks other tests made of the shared sample
        old.unlink()

    async def run():
        return await _session_calls(
            _stdio(data_dir, "--tenant", "acme", "--as", "rsh-dev"),
            [
                lambda s: s.list_tools(),
                lambda s: s.call_tool("feedback", {"rating": "up"}),  # nothing asked yet
                lambda s: s.call_tool(
                    "ask", {"question": "PRs Rashid merged last week", "now": "2026-11-30T12:00:00Z"}
                ),
                lambda s: s.call_tool(
                    "feedback",
                    {
                        "rating": "down",
                        "corrected_plan": {"collection": "pull_requests", "pipeline": [{"$merge": {"into": "x"}}]},
                    },
                ),
                lambda s: s.call_tool("feedback", {"rating": "up", "note": "right", "asker": "priyar"}),
                lambda s: s.call_tool("feedback", {"rating": "up", "note": "right"}),
            ],
        )

    tools, early, ask, bad, claim, good = asyncio.run(run())
    tool = next(t for t in tools.tools if t.name == "feedback")
    assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is False
    assert "asker" not in tool.input_schema["properties"] and "tenant" not in tool.input_schema["properties"]
    assert early.is_error and "no question asked yet" in early.content[0].text
    assert not ask.is_error
    assert bad.is_error and "$merge is not allowed" in bad.content[0].text
    assert not good.is_error and good.structured_content["template"].startswith("feedback-")
    rows = FeedbackStore(data_dir).all("acme")
    # the claimed asker never reached the store: every row is the flags' person
    assert {r.asker for r in rows} == {"rsh-dev"} and rows[-1].question == "PRs Rashid merged last week"
    assert claim.is_error or rows[0].asker == "rsh-dev"


def test_stdio_scoping_follows_the_flags(sample_dir):
    def private_count(*flags: str) -> int:
        async def run():
            return await _session_calls(
                _stdio(sample_dir, *flags),
                [
                    lambda s: s.call_tool("query", {"collection": "messages", "pipeline": PRIVATE}),
                    lambda s: s.call_tool("schema", {"collection": "messages"}),
                ],
            )

        result, schema = asyncio.run(run())
        assert ("security-private" in json.dumps(schema.structured_content)) == (_count(result) > 0)
        return _count(result)

    assert private_count("--tenant", "acme", "--as", "sokafor") > 0  # a member of #security-private
    assert private_count("--tenant", "acme", "--as", "zwei-dev") == 0  # not a member
    assert private_count("--tenant", "acme") == 0  # nobody: public records only


def test_stdio_refuses_an_unknown_person_in_one_line(sample_dir):
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "mcp", "--data-dir", str(sample_dir), "--as", "ghost-user"],
        capture_output=True,
        text=True,
        timeout=120,
        input="",
    )
    assert out.returncode == 2 and "ghost-user" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def http_server(sample_dir):
    settings = Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(http_app(settings, KEYS)) as running:
        yield running


def _http(server, key: str):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    return streamable_http_client(f"{server.url}/mcp", http_client=client)


def test_http_refuses_a_missing_or_unknown_key(http_server):
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    for headers in ({}, {"Authorization": "Bearer not-a-key"}, {"Authorization": "Basic bWVtYmVyLWtleQ=="}):
        response = httpx.post(
            f"{http_server.url}/mcp",
            json=hello,
            timeout=30,
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code == 401 and "API key" in response.json()["error"]


def test_http_scopes_each_call_by_its_key(http_server):
    def calls(key: str):
        async def run():
            return await _session_calls(
                _http(http_server, key),
                [
                    lambda s: s.list_tools(),
                    lambda s: s.call_tool("query", {"collection": "messages", "pipeline": PRIVATE}),
                    lambda s: s.call_tool(
                        "query", {"collection": "pull_requests", "pipeline": [{"$group": {"_id": "$repo"}}]}
                    ),
                    lambda s: s.call_tool("get_record", {"ref": "G04SECPR9Z:" + _private_thread_ts()}),
                    lambda s: s.call_tool(
                        "query",
                        {
                            "collection": "pull_requests",
                            "pipeline": [{"$lookup": {"from": "store_meta", "pipeline": [], "as": "meta"}}],
                        },
                    ),
                ],
            )

        return asyncio.run(run())

    member = calls("member-key")
    assert {t.name for t in member[0].tools} == TOOLS
    assert _count(member[1]) > 0 and not member[3].is_error
    for key in ("outsider-key", "public-key"):
        _tools, private, repos, record, lookup = calls(key)
        assert _count(private) == 0
        assert record.is_error and "that you can read" in record.content[0].text
        assert lookup.is_error and "$lookup from 'store_meta' is not allowed" in lookup.content[0].text
    globex = calls("globex-key")
    repos = {row["_id"] for row in globex[2].structured_content["rows"]}
    assert repos and all(repo.startswith("globex/") for repo in repos)


def _private_thread_ts() -> str:
    from context_engine.sources.sample import STORIES

    return STORIES["leaked_stripe_key"]["thread"]["ts"]

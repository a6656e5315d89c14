"""Class 3: the semantic index never serves a record past the store. A record's access is narrowed
while the index still holds its old public list (an authoritative dump ingested with `--no-index`; a
signed webhook while the server's background sync is held back); nobody who lost access sees its
chunks or snippets through any consumer of semantic hits, and `status` reports the lag."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import shutil
import sys
import threading

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from context_engine.config import Settings
from tests.conftest import run_cli
from tests.serving import Server

NOW = "2026-11-30T12:00:00Z"
SECRET = "freshness-test-secret"
# Who asks: nobody in particular (public records only), and a person with private access elsewhere.
ASKERS = (None, "sokafor")
KEYS_SPEC = {"member-key": ("acme", "sokafor"), "anon-key": ("acme", None)}


def _pull(number: int, title: str, body: str, private: bool, updated_at: str = "2026-11-29T09:00:00Z") -> dict:
    return {
        "id": 880000 + number,
        "number": number,
        "title": title,
        "body": body,
        "state": "open",
        "user": {"login": "rsh-dev"},
        "created_at": "2026-11-28T09:00:00Z",
        "updated_at": updated_at,
        "html_url": f"https://github.com/acme/infra/pull/{number}",
        "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": private}},
    }


# The record narrowed by a dump (CLI), the record narrowed by a webhook, and a public record that
# links to the first (cross-links must not follow into it once it is closed).
DUMPED = _pull(
    9501,
    "Rotate the vexmoor cipher keys",
    "The vexmoor cipher keys rotate every Tuesday at 04:00 "
    "from the vexmoor vault; the runbook is in the vexmoor folder.",
    private=False,
)
HOOKED = _pull(
    9601,
    "Retire the quillfeather relay",
    "The quillfeather relay is retired; quillfeather traffic moves to the new broker on Friday.",
    private=False,
)
LINKER = _pull(
    9502,
    "Follow-up to the cipher rotation",
    "Follow-up to https://github.com/acme/infra/pull/9501: alerts when a rotation is late.",
    private=False,
)


@pytest.fixture(scope="module")
def data_dir(sample_dir, tmp_path_factory):
    from context_engine.ingest import ingest

    copy = tmp_path_factory.mktemp("freshness") / "data"
    shutil.copytree(sample_dir, copy)
    # Public and indexed: the index holds these chunks with ["*"].
    ingest(
        Settings(data_dir=copy, mongodb_uri=None), {"acme": {"pull_requests": [DUMPED, HOOKED, LINKER]}}, public=True
    )
    return copy


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CONTEXT_ENGINE_USER", raising=False)


def _settings(data_dir, asker=None) -> Settings:
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", asker=asker, use_llm=False)


def _graph_state(data_dir, question: str, asker) -> dict:
    """The graph's final state: every hit list, the contexts the answer was written from, the answer."""
    from context_engine.assistant.graph import graph

    context = {"tenant": "acme", "user": asker, "anonymous": asker is None, "data_dir": str(data_dir)}
    state = {}
    for state in graph.stream({"question": question, "now": NOW}, context=context, stream_mode="values"):  # noqa: B007 (the last one is kept)
        pass
    return state


def _seen(state: dict) -> str:
    """Everything of a graph run an asker or a prompt could see, as one text."""
    parts = {
        key: state.get(key) for key in ("semantic", "fused", "reranked", "contexts", "answer", "citations", "records")
    }
    parts["documents"] = [(d.page_content, d.metadata) for d in state.get("documents", [])]
    return json.dumps(parts, default=str, ensure_ascii=False)


def _retrieved_refs(data_dir, question: str, asker) -> set[str]:
    from context_engine.assistant.retriever import make_retriever

    docs = make_retriever(_settings(data_dir, asker), fused=False).invoke(question, k=20)
    return {d.metadata["doc_ref"] for d in docs}


def _index_holds_public(data_dir, word: str, ref: str) -> bool:
    """The persisted index (not the store) still serves `ref` to everyone: the window under test."""
    from context_engine.retrievers.index import SemanticIndex

    index = SemanticIndex.load(_settings(data_dir), "acme")
    return ref in {d.metadata["doc_ref"] for d in index.search_bm25(word, 10, [])}


def _mcp_stdio(data_dir, asker, calls):
    import os

    env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    env.pop("CONTEXT_ENGINE_USER", None)
    flags = ["--tenant", "acme", *(["--as", asker] if asker else [])]
    transport = stdio_client(
        StdioServerParameters(
            command=sys.executable,
            env=env,
            args=["-m", "context_engine.cli", "mcp", "--data-dir", str(data_dir), *flags],
        )
    )

    async def run():
        async with transport as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return [await call(session) for call in calls]

    return asyncio.run(run())


def test_a_dump_narrowing_a_record_with_no_index_leaves_no_window(data_dir, tmp_path):
    from context_engine.answering.links import follow_links
    from context_engine.resources import principals_for, store_for

    question = "how do the vexmoor cipher keys rotate?"
    # Before: the record is public, and every path finds it (so the checks below can fail).
    assert "acme/infra#9501" in _retrieved_refs(data_dir, question, None)
    assert "vexmoor" in _seen(_graph_state(data_dir, question, None))

    # An authoritative dump says the repository is private now; the index is not touched.
    dump = tmp_path / "pulls.jsonl"
    dump.write_text(
        json.dumps(
            {
                **DUMPED,
                "head": {"ref": "rotate-vexmoor"},  # `head`: a /pulls record
                "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": True}},
            }
        )
        + "\n"
    )
    out = run_cli(
        "ingest", "github", str(dump), "--no-index", "--json", "--tenant", "acme", "--data-dir", str(data_dir)
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["collections"]["pull_requests"]["updated"] == 1
    assert _index_holds_public(data_dir, "vexmoor", "acme/infra#9501")

    for asker in ASKERS:
        # the graph's retriever, and the whole run: hit lists, fused, reranked, prompt contexts, answer
        assert "acme/infra#9501" not in _retrieved_refs(data_dir, question, asker)
        assert "vexmoor" not in _seen(_graph_state(data_dir, question, asker)).lower()
        # cross-links read through the scoped store: the linking record is readable, the target is not
        settings = _settings(data_dir, asker)
        chain = follow_links(store_for(settings), "acme", principals_for(settings), ["acme/infra#9502"])
        assert "acme/infra#9502" in chain.start and "acme/infra#9501" not in json.dumps(chain.to_json())
    # the CLI, a whole other process
    for flags in ([], ["--as", "sokafor"]):
        cli = run_cli("ask", question, "--json", "--now", NOW, "--tenant", "acme", "--data-dir", str(data_dir), *flags)
        assert cli.returncode == 0, cli.stderr
        shown = {
            k: v for k, v in json.loads(cli.stdout).items() if k not in ("question", "queries")
        }  # the asker's words
        assert "vexmoor" not in json.dumps(shown).lower()
        assert "acme/infra#9501" not in {d["metadata"]["doc_ref"] for d in shown["documents"]} | {
            c.get("id") for c in shown["citations"]
        }

    # MCP: search snippets, the record itself, the linking record's links, and the change prompt
    for asker in ASKERS:
        search, record, linker, prompt = _mcp_stdio(
            data_dir,
            asker,
            [
                lambda s: s.call_tool("search", {"query": question, "k": 10}),
                lambda s: s.call_tool("get_record", {"ref": "acme/infra#9501"}),
                lambda s: s.call_tool("get_record", {"ref": "acme/infra#9502"}),
                lambda s: s.get_prompt("context_for_change", {"task": "rotate the cipher keys"}),
            ],
        )
        assert not search.is_error and search.structured_content["results"]
        assert "vexmoor" not in json.dumps(search.structured_content).lower()
        assert record.is_error and "no record" in record.content[0].text
        assert not linker.is_error and "9501" not in json.dumps(linker.structured_content["linked"])
        assert "acme/infra#9502" in prompt.messages[0].content.text  # the prompt does list cipher records
        assert (
            "vexmoor" not in prompt.messages[0].content.text.lower() and "#9501" not in prompt.messages[0].content.text
        )

    # status says the index is behind, and by how much, instead of "all embedded" and nothing else
    status = run_cli("status", "--tenant", "acme", "--json", "--data-dir", str(data_dir))
    lag = json.loads(status.stdout)["tenants"]["acme"]["index"]["lag"]
    assert lag["written_since"] >= 1 and lag["access_changed"] >= 1
    text = run_cli("status", "--tenant", "acme", "--data-dir", str(data_dir)).stdout
    assert "index BEHIND the store" in text and "with changed access" in text


def _signed_github(url: str, event: str, payload: dict, delivery: str) -> httpx.Response:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
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


def _served(out: dict) -> str:
    """What the server answered from the records (not the asker's own question echoed back)."""
    return json.dumps({k: out.get(k) for k in ("answer", "citations", "records", "documents")}, default=str).lower()


def test_a_webhook_narrowing_a_record_while_the_background_sync_is_held_leaves_no_window(data_dir, monkeypatch):
    import context_engine.ingest as ingest_module
    from context_engine.mcp_server import http_app
    from context_engine.server import ApiKey, create_app

    keys = {key: ApiKey(tenant=tenant, user=user) for key, (tenant, user) in KEYS_SPEC.items()}
    question = "why is the quillfeather relay retired?"
    # The server syncs the index in a background thread through `ingest.sync_tenant_index`: hold it.
    release, held = threading.Event(), threading.Event()
    sync = ingest_module.sync_tenant_index

    def held_sync(settings, tenant):
        held.set()
        assert release.wait(120), "the held sync was never released"
        return sync(settings, tenant)

    monkeypatch.setattr(ingest_module, "sync_tenant_index", held_sync)
    settings = _settings(data_dir)
    app = create_app(settings, keys)
    with Server(app) as server, Server(http_app(settings, keys)) as mcp:
        try:
            for key in keys:
                before = server.client(key).invoke({"question": question, "now": NOW})
                assert "retire the quillfeather relay" in _served(before)  # the record's title, cited
            newer = {
                **HOOKED,
                "updated_at": "2026-11-30T08:00:00Z",
                "base": {"ref": "main", "repo": {"full_name": "acme/infra", "private": True}},
            }
            hooked = _signed_github(
                server.url,
                "pull_request",
                {"action": "edited", "pull_request": newer, "repository": {"full_name": "acme/infra", "private": True}},
                "d-narrow-1",
            )
            assert hooked.status_code == 200 and hooked.json()["ingested"]["index"] == "queued", hooked.text
            assert held.wait(30) and app.state.indexer.state()["running"]
            assert _index_holds_public(data_dir, "quillfeather", "acme/infra#9601")

            for key in keys:
                after = server.client(key).invoke({"question": question, "now": NOW})
                assert "retire the quillfeather relay" not in _served(after) and "9601" not in _served(after)

                async def mcp_calls():
                    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)  # noqa: B023 (run below, in this iteration)
                    async with (
                        streamable_http_client(f"{mcp.url}/mcp", http_client=client) as streams,
                        ClientSession(streams[0], streams[1]) as session,
                    ):
                        await session.initialize()
                        return (
                            await session.call_tool("search", {"query": question, "k": 10}),
                            await session.call_tool("get_record", {"ref": "acme/infra#9601"}),
                        )

                search, record = asyncio.run(mcp_calls())
                assert not search.is_error and "quillfeather" not in json.dumps(search.structured_content).lower()
                assert record.is_error
            status = run_cli("status", "--tenant", "acme", "--json", "--data-dir", str(data_dir))
            assert json.loads(status.stdout)["tenants"]["acme"]["index"]["lag"]["access_changed"] >= 1
        finally:
            release.set()
            assert app.state.indexer.wait_idle(120)
    # Once the sync ran, the index itself holds the narrowed list and status is current again.
    assert not _index_holds_public(data_dir, "quillfeather", "acme/infra#9601")
    status = run_cli("status", "--tenant", "acme", "--json", "--data-dir", str(data_dir))
    assert json.loads(status.stdout)["tenants"]["acme"]["index"]["lag"]["written_since"] == 0


def test_status_counts_only_what_was_written_after_the_index_and_a_sync_catches_it_up(tmp_path):
    from context_engine.ingest import ingest, sync_tenant_index
    from context_engine.retrievers.index import index_lag
    from context_engine.store.documents import open_store

    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    pull = _pull(9701, "Tune the brindle cache", "The brindle cache keeps an hour.", private=False)
    ingest(settings, {"acme": {"pull_requests": [pull]}}, public=True)
    assert index_lag(settings, "acme", open_store(settings)) == {"written_since": 0, "access_changed": 0}
    # A field no chunk shows, written without indexing: behind by one record, its access unchanged.
    ingest(settings, {"acme": {"pull_requests": [{**pull, "ci_minutes": 12}]}}, index=False, public=True)
    assert index_lag(settings, "acme", open_store(settings)) == {"written_since": 1, "access_changed": 0}
    # The sync finds the same chunks (nothing to write but the stamp): current again.
    assert not sync_tenant_index(settings, "acme").changed
    assert index_lag(settings, "acme", open_store(settings)) == {"written_since": 0, "access_changed": 0}


def test_a_slack_thread_whose_parent_is_not_stored_is_served_while_every_reply_is_readable(tmp_path):
    from context_engine.ingest import ingest

    settings = _settings(tmp_path)
    replies = [
        {
            "type": "message",
            "channel_id": "C0ORPHAN01",
            "user": "U0DCC75DEF",
            "ts": ts,
            "thread_ts": "1796600000.000100",
            "text": text,
            "acl": ["*"],
        }
        for ts, text in (
            ("1796600001.000100", "the larkspur migration starts Monday"),
            ("1796600002.000100", "larkspur rollback plan is in the doc"),
        )
    ]
    ingest(settings, {"acme": {"messages": replies}})
    # Indexed as one unit under the thread's ref, which no stored record has.
    assert _retrieved_refs(tmp_path, "larkspur migration", None) == {"C0ORPHAN01:1796600000.000100"}
    # One reply closed by an authoritative write, the index untouched: the unit is no longer served.
    ingest(settings, {"acme": {"messages": [{**replies[1], "acl": []}]}}, index=False)
    assert _index_holds_public(tmp_path, "larkspur", "C0ORPHAN01:1796600000.000100")
    assert _retrieved_refs(tmp_path, "larkspur migration", None) == set()

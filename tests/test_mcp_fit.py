"""MCP fit for agents, through the official MCP client connected in-process (`mcp.Client` on the
server object): every result within the documented budget and never the same data twice, tool
annotations and titles, the server's name and version, and `context_for_change` built from the
changes that touched the given path."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client

from context_engine import mcp_server
from context_engine.config import Settings
from context_engine.mcp_server import RESULT_BUDGET, SUMMARY_BUDGET, build_server

NOW = "2026-11-30T12:00:00Z"


def _calls(settings: Settings, calls):
    async def run():
        async with Client(build_server(settings)) as client:
            return client.server_info, [await call(client) for call in calls]

    return asyncio.run(run())


@pytest.fixture
def member(settings) -> Settings:
    return settings.with_overrides(asker="sokafor")


def _sizes(result) -> tuple[int, int]:
    text = "".join(block.text for block in result.content)
    return len(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))), len(text)


def test_every_result_stays_within_the_budget_and_says_what_it_cut(member):
    big = [
        ("query", {"collection": "pull_requests", "pipeline": [{"$match": {}}]}),  # ~90 K unbounded
        ("query", {"collection": "messages", "pipeline": [{"$match": {}}], "offset": 7}),
        ("schema", {}),
        ("search", {"query": "session cache redis", "k": 25}),
        ("get_record", {"ref": "acme/infra#812"}),
        ("ask", {"question": "why did we switch the session cache to Redis?", "now": NOW}),
    ]
    _, results = _calls(member, [lambda c, name=name, args=args: c.call_tool(name, args) for name, args in big])
    for (name, _), result in zip(big, results):
        assert not result.is_error, (name, result.content)
        structured, text = _sizes(result)
        assert structured <= RESULT_BUDGET and text <= SUMMARY_BUDGET, (name, structured, text)
        # the summary is not the structured result again
        assert json.dumps(result.structured_content, ensure_ascii=False) not in result.content[0].text
    page, messages = results[0].structured_content, results[1].structured_content
    assert page["total"] == 200 and 0 < len(page["rows"]) < 50 and page["next_offset"] == len(page["rows"])
    assert "fields cut to" in page["truncated"] and "body" in page["truncated"] and "get_record" in page["truncated"]
    assert f"next page: offset={page['next_offset']}" in results[0].content[0].text
    assert messages["next_offset"] == 7 + len(messages["rows"])
    assert len(results[3].structured_content["results"]) == 25  # short hits: all of them fit


def test_paging_reads_every_row_exactly_once(member):
    async def run():
        seen, offset = [], 0
        async with Client(build_server(member)) as client:
            while offset is not None:
                result = await client.call_tool(
                    "query",
                    {
                        "collection": "pull_requests",
                        "offset": offset,
                        "pipeline": [{"$sort": {"number": 1}}, {"$project": {"number": 1, "body": 1}}],
                    },
                )
                assert _sizes(result)[0] <= RESULT_BUDGET
                seen += [row["number"] for row in result.structured_content["rows"]]
                offset = result.structured_content["next_offset"]
        return seen

    seen = asyncio.run(run())
    assert len(seen) == 200 and seen == sorted(set(seen))


def test_a_cut_field_can_be_read_whole_as_the_note_says(member):
    note_query = {"collection": "pull_requests", "pipeline": [{"$match": {}}]}
    _, (page,) = _calls(member, [lambda c: c.call_tool("query", note_query)])
    cut = next(row for row in page.structured_content["rows"] if row["body"].endswith(" …"))
    ref, shown = cut["ref"], cut["body"][:-2]
    rest = {
        "collection": "pull_requests",
        "pipeline": [
            {"$match": {"ref": ref}},
            {
                "$project": {
                    "head": {"$substrCP": ["$body", 0, len(shown)]},
                    "tail": {"$substrCP": ["$body", len(shown), 4000]},
                    "whole": "$body",
                }
            },
        ],
    }
    _, (whole,) = _calls(member, [lambda c: c.call_tool("query", rest)])
    row = whole.structured_content["rows"][0]
    assert row["head"] == shown and row["head"] + row["tail"] == row["whole"] and row["tail"]


def test_small_results_come_whole_in_the_text_too(member):
    _, (count,) = _calls(
        member, [lambda c: c.call_tool("query", {"collection": "pull_requests", "pipeline": [{"$count": "n"}]})]
    )
    n = count.structured_content["rows"][0]["n"]
    assert "truncated" not in count.structured_content and f'[{{"n":{n}}}]' in count.content[0].text


def test_a_row_larger_than_the_budget_is_skipped_with_a_sentence_not_a_stall(monkeypatch):
    monkeypatch.setattr(mcp_server, "FIELD_LIMITS", (100,))
    huge = {"ref": "x", **{f"f{i}": "y" * 100 for i in range(200)}}  # 200 fields of 100: ~22 K at the floor
    data, _ = mcp_server._query_page([{"ref": "a"}, huge, {"ref": "b"}], offset=1)
    assert data["rows"] == [] and data["next_offset"] == 2 and "alone is larger than the budget" in data["truncated"]
    data, _ = mcp_server._query_page([{"ref": "a"}, huge, {"ref": "b"}], offset=0)
    assert data["rows"] == [{"ref": "a"}] and data["next_offset"] == 1


def test_tools_carry_annotations_titles_and_output_schemas(member):
    _, (tools, prompts, templates) = _calls(
        member, [lambda c: c.list_tools(), lambda c: c.list_prompts(), lambda c: c.list_resource_templates()]
    )
    by_name = {tool.name: tool for tool in tools.tools}
    for name, tool in by_name.items():
        assert tool.title and tool.annotations.title == tool.title, name
        assert tool.annotations.open_world_hint is False, name
        assert tool.annotations.read_only_hint is (name != "feedback"), name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
    assert by_name["query"].annotations.idempotent_hint is True and by_name["ask"].annotations.idempotent_hint is False
    assert by_name["feedback"].annotations.destructive_hint is False
    assert set(by_name["query"].output_schema["required"]) == {"rows", "total", "next_offset"}
    assert f"{RESULT_BUDGET:,}" in by_name["query"].description and "$substrCP" in by_name["query"].description
    assert all(prompt.title for prompt in prompts.prompts) and all(t.title for t in templates.resource_templates)


def test_server_names_itself_with_a_version(member, monkeypatch):
    import context_engine

    info, _ = _calls(member, [])
    assert info.name == "context-engine" and info.title and info.version == mcp_server.server_version()
    assert info.version and info.version != "unknown"  # the venv has the distribution installed
    monkeypatch.setattr(context_engine, "__version__", "9.9.9", raising=False)
    assert mcp_server.server_version() == "9.9.9"  # the package's own version wins over metadata


def _prompt(settings: Settings, task: str) -> str:
    _, (prompt,) = _calls(settings, [lambda c: c.get_prompt("context_for_change", {"task": task})])
    return prompt.messages[0].content.text


def test_context_for_change_uses_the_changes_that_touched_the_path(settings):
    text = _prompt(settings, "src/checkout/session.py")
    itself = text.split("itself, newest first")[1].split("\n\n")[0]
    shas = [line.split("] ")[1].split(":")[0] for line in itself.strip().splitlines()[1:]]
    assert shas and all(line.startswith("- [commits]") for line in itself.strip().splitlines()[1:])
    # each listed commit really changed the file, newest first
    from context_engine import service

    commits = service.query(
        settings,
        "commits",
        [{"$match": {"files.filename": "src/checkout/session.py"}}, {"$sort": {"author.date": -1}}, {"$limit": 10}],
    )
    assert shas == [c["sha"][:12] for c in commits]
    linked = text.split("Linked to those changes")[1]
    assert "[pull_requests] acme/payments#" in linked  # the pull requests behind those commits
    assert "People who changed it:" in text
    assert "Redis" not in text and "acme/infra" not in text  # nothing about other code


def test_context_for_change_says_when_nothing_touched_the_path(settings):
    text = _prompt(settings, "src/session/cache.py")
    assert "No commit or pull request I can read changed src/session/cache.py or another file of src/session/" in text
    assert "acme/" not in text and "[pull_requests]" not in text and "[commits]" not in text


def test_context_for_change_falls_back_to_the_directory(settings):
    text = _prompt(settings, "src/checkout/new_module.py")
    assert "Nothing I can read changed src/checkout/new_module.py itself." in text
    beside = text.split("Changes to other files of src/checkout/")[1].split("\n\n")[0]
    assert beside.count("- [commits]") >= 1


def test_context_for_change_is_scoped_to_the_asker(settings, monkeypatch):
    """A change only the asker's access reaches: the prompt for someone else does not show it."""
    from context_engine import service

    real = service.query
    private = {
        "sha": "f" * 40,
        "ref": "f" * 40,
        "message": "Rotate the leaked key (private)",
        "author": {"name": "Sam Okafor", "date": "2026-11-29T10:00:00Z"},
        "files": [{"filename": "src/secret/k.py"}],
    }

    def query(scoped, collection, pipeline):
        rows = real(scoped, collection, pipeline)
        return rows + ([private] if collection == "commits" and scoped.asker == "sokafor" else [])

    # the service is the one place scoping happens; the prompt must ask it as the caller, not as anyone else
    monkeypatch.setattr(service, "query", query)
    monkeypatch.setattr(service, "get_record", lambda scoped, ref: service.RecordView("commits", {}, [], []))
    assert "Rotate the leaked key" in _prompt(settings.with_overrides(asker="sokafor"), "src/secret/k.py")
    assert "Rotate the leaked key" not in _prompt(settings.with_overrides(asker="zwei-dev"), "src/secret/k.py")
    assert "Rotate the leaked key" not in _prompt(settings, "src/secret/k.py")


@pytest.mark.parametrize(
    "task, is_path",
    [
        ("src/session/cache.py", True),
        ("cache.py", True),
        ("src/checkout/", True),
        ("switch the session cache to Redis", False),
        ("Redis", False),
        ("../../etc/passwd x", False),
    ],
)
def test_paths_and_tasks_are_told_apart(task, is_path):
    assert mcp_server._is_path(task) is is_path


def test_ask_says_a_declined_answer_and_a_failed_model(member, monkeypatch):
    from datetime import UTC, datetime

    from context_engine import service

    output = {
        "answer": "I could not reach the configured chat model, so this is the offline answer. " * 40,
        "route": "structured",
        "declined": True,
        "citations": [],
        "queries": [],
        "model_error": "openai: connection refused at http://127.0.0.1:9/v1",
    }
    monkeypatch.setattr(
        service, "ask", lambda scoped, question, now: service.Answer(question, datetime.now(UTC), output)
    )
    _, (result,) = _calls(member, [lambda c: c.call_tool("ask", {"question": "anything"})])
    data = result.structured_content
    assert data["declined"] is True and data["model_error"] == output["model_error"]
    assert data["answer"] == output["answer"]  # ~3 K: fits the structured budget whole
    text = result.content[0].text
    assert text.startswith("The chat model failed (openai: connection refused") and len(text) <= SUMMARY_BUDGET
    assert "whole answer: structured `answer`" in text


@pytest.mark.parametrize(
    "task, said",
    [
        ("", "the task is empty"),
        ("   ", "the task is empty"),
        ("a/" * 1500, "the task is 3,000 characters; at most 2,000"),
    ],
)
def test_context_for_change_refuses_bad_input_in_one_sentence(settings, task, said):
    from mcp.shared.exceptions import MCPError

    async def run():
        async with Client(build_server(settings)) as client:
            try:
                await client.get_prompt("context_for_change", {"task": task})
            except MCPError as exc:
                return exc

    refused = asyncio.run(run())
    assert refused is not None and refused.code == -32602  # invalid params, not an internal error
    assert refused.message.startswith(said) and "\n" not in refused.message


def test_http_refuses_to_start_with_a_key_whose_person_is_not_exactly_one(settings):
    from types import SimpleNamespace as Key

    from context_engine.mcp_server import http_app

    http_app(settings, {"good-key": Key(tenant="acme", user="sokafor"), "open-key": Key(tenant="acme", user=None)})
    for key, said in [
        (Key(tenant="acme", user="ghost-user"), "ghost-user"),
        (Key(tenant="acme", user="sokafor1"), "sokafor1"),
        (Key(tenant="nowhere", user="sokafor"), "nowhere"),
    ]:
        with pytest.raises(ValueError) as refused:
            http_app(settings, {"good-key": Key(tenant="acme", user="sokafor"), "secret-key-123": key})
        message = str(refused.value)
        assert message.startswith("API key secr...:") and said in message and "secret-key-123" not in message


def test_the_budget_holds_for_rows_and_records_of_any_shape():
    """Adversarial shapes (many long fields, deep lists, CJK, hundreds of paths cut), seeded."""
    import random

    rng = random.Random(7)

    def value(depth: int):
        pick = rng.random()
        if depth > 1 or pick < 0.5:
            return rng.choice(["x", "长" * rng.randint(0, 6000), "y" * rng.randint(0, 6000), 3, None, 2.5])
        if pick < 0.75:
            return [value(depth + 1) for _ in range(rng.randint(0, 30))]
        return {
            f"field_{rng.randint(0, 999)}_{'k' * rng.randint(0, 40)}": value(depth + 1)
            for _ in range(rng.randint(0, 12))
        }

    for _ in range(8):
        rows = [
            {"ref": f"r{i}", **{f"f{j}": value(0) for j in range(rng.randint(1, 12))}}
            for i in range(rng.randint(1, 60))
        ]
        data, summary = mcp_server._query_page(rows, offset=rng.randint(0, 5))
        result = mcp_server._with_summary(data, summary)
        structured, text = _sizes(result)
        assert structured <= RESULT_BUDGET and text <= SUMMARY_BUDGET
        links = [{"source": "r0", "relation": "mentions", "target": "t" * 300} for _ in range(100)]
        linked = [
            {"ref": f"t{i}", "collection": "issues", "title": "长" * 500, "url": None, "date": None} for i in range(100)
        ]
        record = mcp_server._with_summary(*mcp_server._record_result("issues", "r0", rows[0], links, linked))
        structured, text = _sizes(record)
        assert structured <= RESULT_BUDGET and text <= SUMMARY_BUDGET


def test_context_for_change_reads_a_bare_file_name_in_any_directory(settings):
    def changes(task: str) -> list[str]:
        text = _prompt(settings, task)
        return text.split("itself, newest first")[1].split("\n\n")[0].splitlines()[1:]

    # the sample's only session.py is src/checkout/session.py (server/middleware/session.ts is not one)
    assert changes("session.py") == changes("src/checkout/session.py") != []
    assert "No commit or pull request I can read changed a file named nothing_like_this.py" in _prompt(
        settings, "nothing_like_this.py"
    )


def test_an_unknown_schema_resource_is_not_found_in_one_sentence(member):
    from mcp.shared.exceptions import MCPError

    async def run():
        async with Client(build_server(member)) as client:
            try:
                await client.read_resource("schema://no_such_collection")
            except MCPError as exc:
                return exc

    refused = asyncio.run(run())
    assert refused is not None and refused.code == -32602  # not found is invalid params, not an internal error
    assert refused.message.startswith("unknown collection 'no_such_collection'; use one of: pull_requests")


def test_a_long_answer_is_cut_by_name_and_its_citations_kept(member, monkeypatch):
    from datetime import UTC, datetime

    from context_engine import service

    citations = [{"n": i, "ref": f"acme/web#{i}", "quote": "q" * 2000} for i in range(20)]
    output = {"answer": "word " * 6000, "route": "semantic", "declined": False, "citations": citations, "queries": []}
    monkeypatch.setattr(
        service, "ask", lambda scoped, question, now: service.Answer(question, datetime.now(UTC), output)
    )
    _, (result,) = _calls(member, [lambda c: c.call_tool("ask", {"question": "anything"})])
    data = result.structured_content
    assert _sizes(result)[0] <= RESULT_BUDGET
    assert data["answer"].endswith(" …") and len(data["citations"]) == 20
    assert all(c["ref"] == f"acme/web#{c['n']}" for c in data["citations"])
    assert "answer" in data["truncated"] and "citations.quote" in data["truncated"]

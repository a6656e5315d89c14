"""The compiled graph as a LangGraph user meets it: inputs, streaming, drawing, chat output, state,
the structured loop's retry edge, and chat models given by the run."""

import json

from langchain_core.documents import Document
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph

from context_engine import build_graph, graph
from context_engine.assistant.context import LibraryContext
from context_engine.assistant.structured_query import run_structured, structured_graph
from context_engine.query.engine import Success
from tests.chat_fakes import ScriptedChatModel

NOW = "2026-11-30T12:00:00Z"
QUESTION = "how many open PRs are there?"


def _context(sample_dir, **extra):
    return {"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False, **extra}


def test_graph_is_the_compiled_state_graph():
    assert isinstance(graph, CompiledStateGraph) and graph.name == "context_engine"
    assert isinstance(build_graph(), CompiledStateGraph)


def test_a_string_a_question_dict_and_chat_messages_all_work(sample_dir):
    as_string = graph.invoke(QUESTION, context=_context(sample_dir))
    as_dict = graph.invoke({"question": QUESTION, "now": NOW}, context=_context(sample_dir))
    as_chat = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=_context(sample_dir))
    as_openai_dicts = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}, context=_context(sample_dir))
    count = as_dict["records"][0]["count"]
    assert count > 0 and as_dict["route"] == "structured" and "pull requests match" in as_dict["answer"]
    for out in (as_string, as_chat, as_openai_dicts):
        assert out["records"] == as_dict["records"]
    # Chat shape: the question, then the answer as an AIMessage with its citations and queries.
    human, ai = as_chat["messages"]
    assert isinstance(human, HumanMessage) and isinstance(ai, AIMessage)
    assert ai.content == as_chat["answer"] and ai.additional_kwargs["queries"][0]["collection"] == "pull_requests"
    assert [type(m) for m in as_string["messages"]] == [HumanMessage, AIMessage]


def test_asker_comes_from_the_run_context(sample_dir):
    mine = graph.invoke(
        {"question": "open issues assigned to me", "now": NOW}, context=_context(sample_dir, user="priyar")
    )
    assert mine["records"] and all(r["fields"]["assignee"]["name"] == "praman" for r in mine["records"])


def test_stream_updates_yields_every_node_in_order(sample_dir):
    nodes = [
        next(iter(chunk))
        for chunk in graph.stream(
            {"question": "why did we switch the session cache to Redis?", "now": NOW},
            context=_context(sample_dir, user="larsn"),
            stream_mode="updates",
        )
    ]
    assert nodes[:2] == ["start_turn", "route"]
    assert {"retrieve", "fuse", "rerank", "compress", "generate", "reflect"} <= set(nodes) and nodes[-1] == "respond"


def test_drawing_shows_every_node_and_the_structured_subgraph():
    drawn = graph.get_graph(xray=True)
    names = {node.split(":")[-1] for node in drawn.nodes}
    assert {
        "start_turn",
        "route",
        "retrieve",
        "fuse",
        "rerank",
        "compress",
        "generate",
        "reflect",
        "respond",
        "resolve",
        "generate_query",
        "validate_query",
        "execute_query",
    } <= names
    assert "structured_query" in graph.get_graph().nodes
    edges = {(e.source, e.target) for e in structured_graph.get_graph().edges}
    assert ("validate_query", "generate_query") in edges and ("execute_query", "generate_query") in edges
    assert "generate_query" in drawn.draw_mermaid()


def test_output_is_small_json_with_documents_for_the_contexts(sample_dir):
    out = graph.invoke(
        {"question": "why did we switch the session cache to Redis?", "now": NOW},
        context=_context(sample_dir, user="larsn"),
    )
    assert out["documents"] and all(isinstance(d, Document) for d in out["documents"])
    assert all({"doc_ref", "collection", "url", "title"} <= set(d.metadata) for d in out["documents"])
    plain = {k: v for k, v in out.items() if k not in ("messages", "documents")}
    assert len(json.dumps(plain)) < 100_000  # no internal hit lists
    assert "semantic" not in out and "fused" not in out and "attempts" not in out
    json.dumps(dumpd(out["messages"])) and json.dumps(dumpd(out["documents"]))  # LangChain-serialisable


def test_records_are_json_with_iso_dates(sample_dir):
    out = graph.invoke({"question": "PRs Rashid merged last week", "now": NOW}, context=_context(sample_dir))
    assert out["records"] and all(r["merged_at"].startswith("2026-11-2") for r in out["records"])
    json.dumps(out["records"]) and json.dumps(out["queries"])


def test_resolution_runs_once_per_question(sample_dir, monkeypatch):
    from context_engine.query import engine

    calls = []
    real = engine.resolve
    monkeypatch.setattr(engine, "resolve", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    graph.invoke(
        {"question": "what happened with the duplicate charges in payments in September?", "now": NOW},
        context=_context(sample_dir, user="priyar"),
    )  # hybrid: router, subgraph, retrieval, answer
    assert len(calls) == 1


def test_the_retry_edge_runs_in_the_production_loop_with_a_failing_planner(sample_dir):
    """A planner model whose first pipeline the validator rejects: the subgraph feeds the error back
    and the second attempt runs. Offline, no endpoint: the model is given by the run context."""
    bad = {"collection": "pull_requests", "pipeline": [{"$where": "sleep(1000)"}]}
    good = {"collection": "pull_requests", "pipeline": [{"$match": {"state": "open"}}, {"$count": "count"}]}
    context = LibraryContext(
        data_dir=str(sample_dir),
        tenant="acme",
        use_llm=True,
        always_llm=True,
        planner_model=ScriptedChatModel.answering(bad, good),
    )
    visits = [
        next(iter(c))
        for c in structured_graph.stream({"question": "open PRs", "now": NOW}, context=context, stream_mode="updates")
    ]
    assert visits.count("generate_query") == 2 and visits.index("validate_query") < visits.index("execute_query")

    result = run_structured(
        "open PRs",
        context_settings(sample_dir),
        now=NOW,
        always_llm=True,
        planner=_llm_planner(ScriptedChatModel.answering(bad, good)),
    )
    assert isinstance(result, Success) and len(result.attempts) == 2
    assert result.attempts[0].error and "$where" in result.attempts[0].error and result.attempts[1].error is None


def context_settings(sample_dir):
    from context_engine.config import Settings

    return Settings(data_dir=sample_dir, tenant="acme", use_llm=False, asker=None)


def _llm_planner(model):
    from context_engine.query.llm_planner import LLMPlanner

    return LLMPlanner(model)


def _events(sample_dir, question, **context):
    import asyncio

    async def collect():
        return [
            e
            async for e in graph.astream_events(
                {"question": question, "now": NOW}, version="v2", context=_context(sample_dir, **context)
            )
        ]

    return asyncio.run(collect())


def test_traces_show_the_retriever_the_named_model_calls_and_each_query(sample_dir):
    router = ScriptedChatModel.answering({"route": "hybrid", "reasons": ["the router model says so"]})
    events = _events(
        sample_dir, "PRs merged last week about the session cache", user="rsh-dev", use_llm=True, router_model=router
    )
    kinds = {(e["event"], e["name"]) for e in events}
    ends = [e for e in events if e["event"] == "on_retriever_end"]
    assert ("on_retriever_start", "HybridRetriever") in kinds and ends
    assert ends[0]["data"]["output"] and all(isinstance(d, Document) for d in ends[0]["data"]["output"])
    model_runs = [e for e in events if e["event"] == "on_chat_model_start"]
    assert [e["name"] for e in model_runs] == ["route"]  # the router's call, named after its node
    queries = [e for e in events if e["event"] == "on_chain_start" and e["name"] == "mongodb_aggregate"]
    assert queries and queries[0]["data"]["input"]["collection"] == "pull_requests"
    assert queries[0]["data"]["input"]["pipeline"][0]["$match"]
    route_updates = [e for e in events if e["event"] == "on_chain_end" and e["name"] == "route"]
    assert route_updates and route_updates[0]["data"]["output"]["route"] == "hybrid"


def test_a_model_string_for_init_chat_model_is_accepted(sample_dir, monkeypatch):
    """`"openai:<model>"` goes through LangChain's init_chat_model, here at a closed local port: the
    router's call fails and the offline route stands (no network, no crash)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from context_engine.assistant.context import Context
    from context_engine.chat_models import chat_model

    settings = Context(model="openai:gpt-4.1-mini", data_dir=str(sample_dir)).settings()
    model = chat_model(settings, "router")
    assert type(model).__name__ == "ChatOpenAI" and model.model_name == "gpt-4.1-mini"
    assert "127.0.0.1:9" in str(model.openai_api_base)


def test_a_nested_question_runs_and_shows_both_queries(sample_dir):
    """ "The person who opened the most PRs in 2026: how many issues did they file that year?": the first query
    ranks the PR authors, the second counts the top one's issues; both are traced and shown, and the answer
    names whom the count is for."""
    question = "The person who opened the most pull requests in 2026: how many issues did they file that same year?"
    events = _events(sample_dir, question)
    ran = [e["data"]["input"] for e in events if e["event"] == "on_chain_start" and e["name"] == "mongodb_aggregate"]
    assert [q["collection"] for q in ran] == ["pull_requests", "issues"]
    out = graph.invoke({"question": question, "now": NOW}, context=_context(sample_dir))
    (query,) = [q for q in out["queries"] if "pipeline" in q]
    assert query["collection"] == "issues" and query["first_step"]["collection"] == "pull_requests"
    assert query["first_step"]["pipeline"] == ran[0]["pipeline"]
    top = query["first_step"]["pipeline"][1]["$group"]["_id"]
    assert top == "$user.login" and out["answer"].startswith("First step: the person at the top is ")

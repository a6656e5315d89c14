"""Models that fail loudly: a configured chat model that cannot be reached, has no structured output
or answers malformed JSON is reported (state, output, answer, CLI), never hidden and never retried
into a slow run; a decline decided by reflection is a decline."""

import json
import socket
import subprocess
import sys
import time

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from context_engine import build_graph, graph
from context_engine.assistant.context import LibraryContext
from context_engine.chat_models import (
    ModelUnavailable,
    StructuredOutputError,
    guarded,
    probe_endpoints,
    structured_output,
    watching,
)
from context_engine.cli import main
from context_engine.config import Settings
from tests.chat_fakes import ScriptedChatModel, TextChatModel

NOW = "2026-11-30T12:00:00Z"
WHY = "why did we switch the session cache to Redis?"
# Nothing listens on the discard port on this machine: the connection is refused at once.
DEAD = "http://127.0.0.1:9/v1"


class ModelStarts(BaseCallbackHandler):
    """The graph nodes whose chat-model calls actually went out, one entry per call."""

    def __init__(self):
        self.names: list[str] = []

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs):
        self.names.append((metadata or {}).get("langgraph_node", ""))


def _ask(sample_dir, question=WHY, *, config=None, app=graph, **context):
    return app.invoke(
        {"question": question, "now": NOW},
        config=config,
        context={"data_dir": str(sample_dir), "tenant": "acme", "user": "larsn", **context},
    )


@pytest.fixture
def dead_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("CONTEXT_ENGINE_USE_LLM", "1")
    monkeypatch.setenv("CONTEXT_ENGINE_MODEL", "gpt-4o-mini")
    with socket.socket() as probe:  # the premise: the port is closed here
        assert probe.connect_ex(("127.0.0.1", 9)) != 0


def test_a_dead_endpoint_is_called_once_reported_and_the_answer_says_so(sample_dir, dead_endpoint):
    _ask(sample_dir, use_llm=False)  # the store, catalogs and indexes loaded: what is timed is the model's
    starts = ModelStarts()
    started = time.perf_counter()
    out = _ask(sample_dir, config={"callbacks": [starts]})
    elapsed = time.perf_counter() - started
    # The router's call found it down; compress, generate and reflect never called it again.
    assert starts.names == ["route"]
    assert elapsed < 10  # no retry storm (it took minutes when every node retried every call)
    # langchain-openai's OpenAIConnectionError: LangChain's ModelConnectionError and openai's own. The
    # sentence reaches the asker: the model's name, never the operator's endpoint.
    assert out["model_error"] == "chat model gpt-4o-mini (ChatOpenAI) could not be reached (OpenAIConnectionError)"
    assert f"The configured chat model failed: {out['model_error']}." in out["answer"]
    assert "127.0.0.1" not in json.dumps({k: v for k, v in out.items() if k not in ("messages", "documents")})
    ai = out["messages"][-1]
    assert isinstance(ai, AIMessage) and ai.content == out["answer"]
    assert ai.additional_kwargs["model_error"] == out["model_error"]
    assert out["citations"]  # the offline rules still answered


def test_the_structured_half_plans_offline_once_the_planner_model_is_down(sample_dir, dead_endpoint):
    # always_llm sends the question to the LLM planner; the router found the endpoint down first.
    starts = ModelStarts()
    out = graph.invoke(
        {"question": "how many open PRs are there?", "now": NOW},
        config={"callbacks": [starts]},
        context=LibraryContext(data_dir=str(sample_dir), tenant="acme", user="larsn", always_llm=True),
    )
    assert starts.names == ["route"]
    assert out["outcome"] == "success" and out["records"][0]["count"] > 0
    [attempt] = out["queries"][0]["attempts"]  # one, and no "planner error" before it
    assert not attempt["error"]
    assert "could not be reached" in out["model_error"]


def test_the_async_path_that_langserve_runs_is_watched_alike(sample_dir, dead_endpoint):
    import asyncio

    starts = ModelStarts()
    out = asyncio.run(
        graph.ainvoke(
            {"question": WHY, "now": NOW},
            config={"callbacks": [starts]},
            context={"data_dir": str(sample_dir), "tenant": "acme", "user": "larsn"},
        )
    )
    assert starts.names == ["route"] and "could not be reached" in out["model_error"]


def test_each_run_tries_the_model_again(sample_dir, dead_endpoint):
    # "Down" lasts one run: a thread's next question calls the model again (it may be up by then).
    app = build_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    calls = []
    for _ in range(2):
        starts = ModelStarts()
        out = _ask(sample_dir, config={**config, "callbacks": [starts]}, app=app)
        assert "could not be reached" in out["model_error"]
        calls.append(starts.names)
    # The second question is a follow-up on the thread: rewriting it is that run's first model call.
    assert calls == [["route"], ["start_turn"]]


def test_a_working_model_leaves_no_model_error(sample_dir):
    router = ScriptedChatModel.answering({"route": "semantic", "reasons": ["a why question"]})
    out = _ask(sample_dir, router_model=router)
    assert out["model_error"] == "" and "(The configured chat model failed" not in out["answer"]
    assert out["messages"][-1].additional_kwargs["model_error"] == ""


def test_a_model_without_structured_output_answers_as_json_in_text(sample_dir):
    router = TextChatModel.saying('Sure. ```json\n{"route": "hybrid", "reasons": ["the text model says so"]}\n```')
    out = _ask(sample_dir, router_model=router)
    assert out["route"] == "hybrid" and out["model_error"] == ""
    # It was asked for JSON with the schema spelt out, in the system prompt it already had.
    system = router.prompts[0][0]
    assert system.type == "system" and "Answer with one JSON object" in system.content
    assert '"route"' in system.content and system.content.startswith("You route questions")


def test_a_malformed_structured_answer_is_asked_again_as_json_text(sample_dir):
    # The native structured call gets prose, the JSON-in-text retry gets the decision.
    router = ScriptedChatModel(
        messages=iter([AIMessage("I think it is hybrid"), AIMessage('{"route": "hybrid", "reasons": ["second try"]}')])
    )
    out = _ask(sample_dir, router_model=router)
    assert out["route"] == "hybrid" and out["model_error"] == ""


def test_invalid_json_every_time_is_reported_and_the_offline_route_stands(sample_dir):
    router = TextChatModel.saying('{"route": "sideways"}')  # JSON, but not a RouteDecision
    starts = ModelStarts()
    out = _ask(sample_dir, router_model=router, config={"callbacks": [starts]})
    assert out["route"] == "semantic"  # the rule-based router's choice for a why question
    assert out["model_error"] == (
        "chat model TextChatModel did not answer in the RouteDecision JSON asked for (ValidationError)"
    )
    assert "(The configured chat model failed" in out["answer"]
    # A malformed answer is asked for again at once, within the router's attempts: never more.
    assert 1 < len(starts.names) <= Settings().max_attempts


def test_a_reflect_decline_is_a_decline(sample_dir):
    judge = TextChatModel.saying('{"supported": "no"}')  # no claim is backed: retried, then declined
    out = _ask(sample_dir, judge_model=judge)
    assert out["reflection"]["action"] == "decline" and out["reflection"]["grounded"] is False
    assert out["declined"] is True and out["outcome"] == "no_results" and out["citations"] == []
    assert out["answer"].startswith("Nothing in the sources answers this question")
    assert out["messages"][-1].additional_kwargs["declined"] is True
    assert out["model_error"] == ""  # the judge answered: declining is its verdict, not a failure


def test_a_reflect_decline_keeps_structured_records_that_answer_by_themselves(sample_dir):
    # Hybrid: the structured half found the PR by its own conditions; no passage mentions "PR".
    out = _ask(sample_dir, "9月支付仓库里关于重复扣款的PR", user="priyar", use_llm=False)
    assert out["route"] == "hybrid" and out["records"] and out["declined"] is False
    assert out["reflection"]["action"] == "accept" and "no context mentions PR" in out["reflection"]["reasons"]
    assert "From the sources" not in out["answer"]  # the passages reflection did not back are left out
    assert [c["id"] for c in out["citations"]] == [r["ref"] for r in out["records"]]


def test_the_same_question_with_an_agreeing_judge_is_answered(sample_dir):
    judge = TextChatModel.saying('{"supported": "yes"}')
    out = _ask(sample_dir, judge_model=judge)
    assert out["reflection"]["action"] == "accept" and out["declined"] is False and out["citations"]


class Verdict(BaseModel):
    supported: str


def test_a_refused_connection_stops_every_later_call_in_the_run():
    calls = []

    def refuse(_messages):
        calls.append(1)
        raise ConnectionRefusedError("refused")

    from langchain_core.runnables import RunnableLambda

    model = RunnableLambda(refuse)
    with watching() as watch:
        for _ in range(3):
            with pytest.raises((ConnectionRefusedError, ModelUnavailable)):
                guarded(model).with_retry(stop_after_attempt=3).invoke("hi")
    assert len(calls) == 1 and watch.down == ["RunnableLambda"]
    assert watch.error == "chat model RunnableLambda could not be reached (ConnectionRefusedError)"


def test_structured_output_outside_a_run_raises_a_clear_error():
    with pytest.raises(
        StructuredOutputError, match="no Verdict in the answer: no JSON object in the answer: 'no idea'"
    ):
        structured_output(TextChatModel.saying("no idea"), Verdict).invoke([("human", "is it?")])
    assert structured_output(TextChatModel.saying('x {"supported": "yes"} {"x": 1}'), Verdict).invoke(
        "is it?"
    ) == Verdict(supported="yes")


def test_the_startup_probe_names_a_dead_endpoint_and_passes_a_live_one(monkeypatch):
    monkeypatch.setenv("CONTEXT_ENGINE_USE_LLM", "1")
    dead = Settings(openai_base_url=DEAD, openai_api_key="k", mongodb_uri=None)
    [problem] = probe_endpoints(dead, timeout=1)
    assert problem.startswith(f"chat model endpoint {DEAD} cannot be reached")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        live = Settings(
            openai_base_url=f"http://127.0.0.1:{server.getsockname()[1]}/v1", openai_api_key="k", mongodb_uri=None
        )
        assert probe_endpoints(live, timeout=1) == []
    assert probe_endpoints(Settings(openai_base_url=DEAD, use_llm=False, mongodb_uri=None)) == []
    assert probe_endpoints(Settings(openai_base_url=None, openai_api_key=None, mongodb_uri=None)) == []


def test_cli_ask_warns_on_one_stderr_line_and_reports_model_error_in_json(sample_dir, dead_endpoint, capsys):
    base = ["ask", WHY, "--data-dir", str(sample_dir), "--as", "larsn", "--now", NOW]
    assert main(base) == 0
    text = capsys.readouterr()
    assert text.err.splitlines() == [
        ("context-engine: warning: chat model gpt-4o-mini (ChatOpenAI) could not be reached (OpenAIConnectionError)")
    ]
    assert "The configured chat model failed" in text.out
    assert main([*base, "--json"]) == 0
    as_json = capsys.readouterr()
    assert as_json.err == "" and json.loads(as_json.out)["model_error"].startswith(
        "chat model gpt-4o-mini (ChatOpenAI) could not"
    )


def test_mcp_startup_warns_about_a_dead_endpoint_in_one_line(sample_dir):
    env = {"OPENAI_BASE_URL": DEAD, "OPENAI_API_KEY": "k", "CONTEXT_ENGINE_USE_LLM": "1"}
    # stdio with nothing to read: the server starts, finds end of input and stops.
    done = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "mcp", "--data-dir", str(sample_dir), "--as", "larsn"],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**_env(), **env},
    )
    warnings = [line for line in done.stderr.splitlines() if "cannot be reached" in line]
    assert warnings == [
        (
            f"context-engine: warning: chat model endpoint {DEAD} cannot be reached (Connection refused); "
            "answers fall back to the offline rules and say so"
        )
    ]


def _env():
    import os

    return {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}


def test_calls_are_counted_inside_the_block_only():
    from context_engine.chat_models import ModelCall, counting_calls, record_call

    record_call(ModelCall(1.0, 10, 2))  # outside any block: counted nowhere, no error
    with counting_calls() as calls:
        record_call(ModelCall(2.5, 400, 30))
        with counting_calls() as inner:
            record_call(ModelCall(1.0, 100, 5))
    assert calls == [ModelCall(2.5, 400, 30)] and inner == [ModelCall(1.0, 100, 5)]

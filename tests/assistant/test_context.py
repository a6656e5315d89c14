"""The run context as a LangGraph user meets it: the form Studio and LangServe draw from its schema,
a dict checked key by key, legacy `configurable` keys, precise errors, Settings built once per run,
the tenant and the asker in every run's trace metadata, and a turn's working state reset from the
state schema."""

import asyncio
import re
import threading
import warnings
from typing import Annotated, Any, get_type_hints

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from context_engine import build_graph, graph
from context_engine.assistant import graph as graph_module
from context_engine.assistant.context import FIELDS, Context, ContextError, LibraryContext, run_context
from context_engine.assistant.state import KEPT_ACROSS_TURNS, State, turn_reset, turn_resetters
from context_engine.config import Settings
from tests.chat_fakes import ScriptedChatModel

NOW = "2026-11-30T12:00:00Z"
HOOKS = {"planner", "always_llm", "base_settings"}


def _context(sample_dir, **extra):
    return {"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False, **extra}


# --- the drawn schema (Studio's assistant form, LangServe's config schema) -------------------------


def _assert_a_plain_form(properties: dict[str, Any]) -> None:
    assert set(properties) == set(FIELDS) and not HOOKS & set(properties)
    for name, prop in properties.items():
        assert prop.get("type") in {"string", "boolean"}, (name, prop)  # no anyOf, no object, no null
        assert len(prop.get("description", "")) > 30, name
        assert "default" in prop and prop["default"] is not None, name


def test_the_context_schema_is_a_plain_described_form_without_test_hooks():
    schema = graph.get_context_jsonschema()
    _assert_a_plain_form(schema["properties"])
    assert {p for p, v in schema["properties"].items() if v["type"] == "boolean"} == {"anonymous", "use_llm"}
    assert all(schema["properties"][m]["type"] == "string" for m in ("model", "router_model", "judge_model"))


def test_the_legacy_config_schema_draws_the_same_form():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangGraph deprecates it; LangServe still draws it
        schema = graph.get_config_jsonschema()
    configurable = schema["$defs"][schema["properties"]["configurable"]["$ref"].split("/")[-1]]
    _assert_a_plain_form(configurable["properties"])


def test_hooks_are_fields_of_library_context_only():
    hooked = LibraryContext(base_settings=Settings(tenant="globex"), always_llm=True, planner=object())
    assert hooked.always_llm and hooked.settings().tenant == "globex"
    plain = Context()
    assert plain.planner is None and plain.always_llm is False and plain.base_settings is None
    with pytest.raises(TypeError):
        Context(always_llm=True)  # type: ignore[call-arg]


def test_a_chat_model_instance_is_still_accepted_from_python():
    model = ScriptedChatModel.answering({"route": "semantic"})
    assert Context(router_model=model).settings().chat_model_spec("router") is model


# --- a dict context, checked ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, says",
    [
        ({"usr": "rsh-dev"}, "unknown context key 'usr' (did you mean 'user'?)"),
        ({"tenat": "acme"}, "(did you mean 'tenant'?)"),
        ({"routermodel": "x"}, "(did you mean 'router_model'?)"),
        ({"zzz": 1}, "unknown context key 'zzz'; the context's keys are tenant, user, data_dir"),
        ({"planner": "x"}, "'planner' is a library hook, not a context key: pass LibraryContext(planner=...)"),
        ({"base_settings": {}}, "LibraryContext(base_settings=...)"),
        ({"use_llm": "no"}, "context key 'use_llm' must be true or false, got str 'no'"),
        ({"anonymous": 1}, "context key 'anonymous' must be true or false"),
        ({"user": ["rsh-dev"]}, "context key 'user' must be a string, got list"),
        ({"model": 3}, "context key 'model' must be a string (a model spec) or a LangChain chat model"),
    ],
)
def test_a_bad_context_key_or_value_is_refused_in_one_sentence(given, says):
    with pytest.raises(ContextError) as raised:
        run_context(given)
    message = str(raised.value)
    assert says in message and "\n" not in message and "--" not in message


def test_a_misspelt_key_is_refused_by_the_graph_not_dropped(sample_dir):
    with pytest.raises(ContextError, match="did you mean 'user'"):
        graph.invoke("open issues assigned to me", context=_context(sample_dir, usr="priyar"))


def test_async_runs_are_checked_off_the_event_loop(sample_dir, monkeypatch):
    """Studio's server refuses blocking calls on its loop: the tenant check (it may open the store) runs
    in a worker thread, and a bad context fails `ainvoke` as it fails `invoke`."""
    threads = []
    real = graph_module.check_tenant_known
    monkeypatch.setattr(
        graph_module, "check_tenant_known", lambda s: threads.append(threading.current_thread()) or real(s)
    )

    async def run():
        out = await graph.ainvoke("open PRs", context=_context(sample_dir, user="priyar"))
        with pytest.raises(ContextError, match="did you mean 'user'"):
            await graph.ainvoke("open PRs", context=_context(sample_dir, usr="priyar"))
        return out, threading.current_thread()

    out, loop_thread = asyncio.run(run())
    assert out["records"] and threads and loop_thread not in threads


def test_null_is_the_default():
    assert run_context({"user": None, "use_llm": None, "tenant": None}) == Context()


# --- legacy configurable keys ---------------------------------------------------------------------


def test_configurable_context_keys_are_honoured_without_a_context(sample_dir):
    """`config={"configurable": {...}}` (LangGraph before `context=`) names the asker as `context` does."""
    legacy = graph.invoke(
        {"question": "open issues assigned to me", "now": NOW},
        config={"configurable": {**_context(sample_dir), "user": "priyar", "thread_id": "t"}},
    )
    current = graph.invoke(
        {"question": "open issues assigned to me", "now": NOW}, context=_context(sample_dir, user="priyar")
    )
    assert legacy["records"] and legacy["records"] == current["records"]
    assert all(r["fields"]["assignee"]["name"] == "praman" for r in legacy["records"])


def test_configurable_keys_that_disagree_with_the_context_are_refused():
    # A server's context comes from the caller's key: no second channel may change who asks.
    server = Context(tenant="acme", user="", anonymous=True)
    for configurable in ({"user": "rsh-dev"}, {"tenant": "globex"}, {"router_model": "openai:gpt-4.1"}):
        with pytest.raises(ContextError) as raised:
            run_context(server, {"configurable": configurable})
        key = next(iter(configurable))
        assert f"{key!r} is in both `context`" in str(raised.value) and f"context={{{key!r}: ...}}" in str(raised.value)
    # Studio mirrors the context into `configurable`: the same values are one value.
    mirrored = run_context({"user": "rsh-dev"}, {"configurable": {"user": "rsh-dev", "thread_id": "x"}})
    assert mirrored.user == "rsh-dev"


def test_a_missing_asker_is_explained_without_cli_flags(sample_dir):
    out = graph.invoke({"question": "my open PRs", "now": NOW}, context=_context(sample_dir))
    assert "no asker is set" in out["answer"] and "the run context's `user`" in out["answer"]
    assert "--as" not in out["answer"]


def test_the_graph_as_a_node_of_another_runs_in_the_parent_s_context(sample_dir):
    from langgraph.graph import END, START, StateGraph

    from context_engine.assistant.state import InputState, OutputState

    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("context_engine", graph)
    builder.add_edge(START, "context_engine")
    builder.add_edge("context_engine", END)
    recorder = _Recorder()
    out = builder.compile().invoke(
        {"question": "open issues assigned to me", "now": NOW},
        config={"callbacks": [recorder]},
        context=_context(sample_dir, user="priyar"),
    )
    assert out["records"] and all(r["fields"]["assignee"]["name"] == "praman" for r in out["records"])
    assert any(name == "start_turn" and m.get("user") == "priyar" for name, m in recorder.starts)


# --- the tenant -----------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["priyar", ""])
def test_an_unknown_tenant_is_named_with_the_known_ones(sample_dir, user):
    with pytest.raises(ContextError) as raised:
        graph.invoke("open PRs", context=_context(sample_dir, tenant="acmee", user=user))
    assert str(raised.value).startswith("unknown tenant 'acmee' (known: acme, globex)")


def test_an_invalid_tenant_name_is_refused_before_any_store_is_opened(tmp_path):
    with pytest.raises(ValueError, match=re.escape("invalid tenant name '../etc'")):
        graph.invoke("open PRs", context={"tenant": "../etc", "data_dir": str(tmp_path / "none")})


# --- one Settings per run -------------------------------------------------------------------------


def test_settings_are_built_once_per_run_and_afresh_for_the_next(sample_dir, monkeypatch):
    built = []
    real = Context._build_settings
    monkeypatch.setattr(Context, "_build_settings", lambda self: built.append(1) or real(self))
    reused = Context(**_context(sample_dir, user="priyar"))
    # Hybrid: router, both halves (the subgraph's four nodes), fuse ... respond, all on one Settings.
    graph.invoke(
        {"question": "what happened with the duplicate charges in payments in September?", "now": NOW}, context=reused
    )
    assert len(built) == 1
    monkeypatch.setenv("CONTEXT_ENGINE_CONTEXT_SET", "0")  # read by the next run, not cached across runs
    seen = []
    monkeypatch.setattr(graph_module, "check_tenant_known", lambda s: seen.append(s.use_context_set))
    graph.invoke({"question": "open PRs", "now": NOW}, context=reused)
    assert len(built) == 2 and seen == [False] and reused._settings is None  # the caller's object untouched


# --- trace metadata -------------------------------------------------------------------------------


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[tuple[str, dict[str, Any]]] = []

    def on_chain_start(self, serialized, inputs, *, metadata=None, name=None, **kwargs):
        self.starts.append((name or "", dict(metadata or {})))


@pytest.mark.parametrize(
    "given, tenant, user",
    [
        ({"user": "priyar"}, "acme", "priyar"),
        ({"user": "priyar", "anonymous": True}, "acme", ""),
        ({"tenant": "globex"}, "globex", ""),
    ],
)
def test_every_run_of_the_graph_carries_the_tenant_and_the_asker(sample_dir, given, tenant, user):
    recorder = _Recorder()
    graph.invoke(
        {"question": "open PRs", "now": NOW}, config={"callbacks": [recorder]}, context=_context(sample_dir, **given)
    )
    names = [name for name, _ in recorder.starts]
    assert names[0] == "context_engine" and {"start_turn", "route", "respond"} <= set(names)
    assert all(m.get("tenant") == tenant and m.get("user") == user for _, m in recorder.starts), recorder.starts[:3]


def test_the_caller_s_metadata_is_kept_beside_the_tenant(sample_dir):
    recorder = _Recorder()
    graph.invoke(
        "open PRs",
        config={"callbacks": [recorder], "metadata": {"session": "s1"}},
        context=_context(sample_dir, user="priyar"),
    )
    assert recorder.starts[0][1]["session"] == "s1" and recorder.starts[0][1]["user"] == "priyar"


def test_the_structured_graph_of_its_own_prepares_its_runs_like_the_main_graph(sample_dir):
    """`langgraph.json`'s second graph: a misspelt key is refused with a sentence, an unknown tenant
    named, and its runs carry the tenant and the asker (the copy inside the main graph runs in the
    parent's context, which the tests above exercise)."""
    standalone = graph_module.structured_query_graph
    with pytest.raises(ContextError, match="did you mean 'user'"):
        standalone.invoke("open PRs", context=_context(sample_dir, usr="priyar"))
    with pytest.raises(ValueError, match="unknown tenant 'acmee'"):
        standalone.invoke("open PRs", context=_context(sample_dir, tenant="acmee"))
    recorder = _Recorder()
    out = standalone.invoke(
        {"question": "open PRs", "now": NOW},
        config={"callbacks": [recorder]},
        context=_context(sample_dir, user="priyar"),
    )
    assert out["rows"] and recorder.starts[0][0] == "structured_query"
    assert all(m.get("tenant") == "acme" and m.get("user") == "priyar" for _, m in recorder.starts)


# --- a turn's working state -----------------------------------------------------------------------


def test_every_state_field_is_kept_or_reset_when_a_turn_starts():
    reset = turn_reset()
    assert set(reset) | KEPT_ACROSS_TURNS == set(get_type_hints(State))
    assert not set(reset) & KEPT_ACROSS_TURNS
    assert reset["rows"] == [] and reset["resolution"] == {} and reset["declined"] is False
    assert reset["confidence"] == 0.0 and reset["reflections"] == 0 and reset["answer"] == ""
    assert turn_reset()["rows"] is not reset["rows"]  # fresh, never shared between turns


def test_a_new_state_field_is_reset_without_being_listed():
    class Grown(State, total=False):
        model_error: str
        notes: Annotated[list[str], "a reducer"]

    resetters = turn_resetters(Grown)
    assert resetters["model_error"]() == "" and resetters["notes"]() == []

    class Odd(State, total=False):
        handle: object

    with pytest.raises(TypeError, match=r"'handle'|object"):
        turn_resetters(Odd)


def test_a_turn_leaves_no_working_state_to_the_next(sample_dir):
    threaded = build_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reset"}}
    context = _context(sample_dir, user="larsn")
    first = threaded.invoke({"question": "how many open PRs are there?", "now": NOW}, config, context=context)
    assert first["route"] == "structured" and threaded.get_state(config).values["plan"]
    second = threaded.invoke(
        {"question": "why did we switch the session cache to Redis?", "now": NOW}, config, context=context
    )
    values = threaded.get_state(config).values
    assert second["route"] == "semantic" and values["plan"] == {} and values["rows"] == []
    assert values["attempts"] == [] and not any("count" in r for r in second["records"])
    assert len(values["turns"]) == 2 and len(values["messages"]) == 4  # what a thread keeps, it keeps

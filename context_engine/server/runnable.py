"""The graph as LangServe serves it: what a client may send, what it gets back, and the run context
the per-request config modifier leaves for the run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableGenerator, RunnableLambda
from pydantic import BeforeValidator
from typing_extensions import TypedDict

from context_engine.assistant.graph import as_graph_input
from context_engine.assistant.graph import graph as context_graph
from context_engine.assistant.state import OutputState

RUN_CONTEXT_KEY = "context_engine_run_context"  # where the per-request modifier leaves the run's Context


class QuestionInput(TypedDict, total=False):
    question: str
    now: str  # ISO 8601; the clock when absent


# What a client may send: `{"question": ..., "now": ...}`, or the question as a plain string. The schema
# is the object (two text fields in the playground's form; a union would draw as an anyOf), while
# validation first turns a string into it, so `RemoteRunnable(...).invoke("open PRs by Rashid")` works.
# (Chat input, `{"messages": [...]}`, is for Python and Studio: the playground's form cannot draw it.)
Question = Annotated[QuestionInput, BeforeValidator(as_graph_input)]


class Answer(OutputState, total=False):
    """What a run returns: the graph's own output (`OutputState`). The answer with its citations,
    queries and records, `messages` as LangChain messages and `documents` as `Document`s, serialised
    the LangChain way (`RemoteRunnable` returns `AIMessage` and `Document` objects). LangServe
    validates `invoke`'s output against this type: a field missing here is dropped from the response."""


OUTPUT_FIELDS = list(Answer.__annotations__)


class OutputChange(dict):
    """The output fields one step of a run changed. Chunks add up (a later value replaces an earlier
    one) to the run's output, as LangChain adds a stream's chunks: `stream_log`'s `final_output` and
    `stream_events`' last `on_chain_end` are `invoke`'s output."""

    def __add__(self, other: dict[str, Any]) -> OutputChange:
        return OutputChange({**self, **other})


def _changes(states: Iterator[dict[str, Any]]) -> Iterator[OutputChange]:
    last: dict[str, Any] = {}
    for state in states:
        changed = OutputChange({k: v for k, v in state.items() if k not in last or last[k] != v})
        last = state
        if changed:
            yield changed


async def _achanges(states: AsyncIterator[dict[str, Any]]) -> AsyncIterator[OutputChange]:
    last: dict[str, Any] = {}
    async for state in states:
        changed = OutputChange({k: v for k, v in state.items() if k not in last or last[k] != v})
        last = state
        if changed:
            yield changed


def graph_in_run_context(graph: Runnable = context_graph, stream_mode: str = "values") -> Runnable:
    """The input coerced to the graph's dict, then the graph run with the request's Context passed the
    public way (`context=`), streaming the output's fields only (`stream_mode` as LangGraph's). The
    Context travels from the per-request config modifier under `configurable[RUN_CONTEXT_KEY]`."""

    def in_run_context(_inputs: Any, config: RunnableConfig) -> Runnable:
        # Returning a runnable makes RunnableLambda stream it with the same input and config.
        context = (config.get("configurable") or {}).get(RUN_CONTEXT_KEY)
        return graph.bind(context=context, output_keys=OUTPUT_FIELDS, stream_mode=stream_mode)

    return RunnableLambda(as_graph_input, name="question") | RunnableLambda(in_run_context, name=graph.get_name())


def served_runnable(graph: Runnable = context_graph) -> Runnable:
    """The graph as LangServe serves it: `invoke` returns its output, a stream what each step changed
    in it (`OutputChange`). The working fields (hit lists, fused and reranked passages, rows) stay
    in the graph: streamed, they made a stream 4-70x the size of the answer it led to."""
    return (graph_in_run_context(graph) | RunnableGenerator(_changes, _achanges, name="changes")).with_types(
        input_type=Question, output_type=Answer
    )

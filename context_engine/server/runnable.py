"""The graph as LangServe serves it: what a client may send, what it gets back, and the run context
the per-request config modifier leaves for the run."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import BeforeValidator
from typing_extensions import TypedDict

from context_engine.assistant.graph import as_graph_input, graph as context_graph
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


# The served output is the graph's own (`OutputState`): the answer with its citations, queries and
# records, `messages` as LangChain messages and `documents` as `Document`s (serialised the LangChain
# way, so `RemoteRunnable` returns `AIMessage` and `Document` objects). LangServe validates `invoke`'s
# output against this type, so a field missing from it would be dropped from the response.
OUTPUT_FIELDS = list(OutputState.__annotations__)


def served_runnable(graph: Runnable = context_graph) -> Runnable:
    """The graph as LangServe serves it: the input coerced to the graph's dict, then the graph run with
    the request's Context passed the public way (`context=`), streaming as the graph itself streams.
    The Context travels from the per-request config modifier under `configurable[RUN_CONTEXT_KEY]`."""

    def in_run_context(_inputs: Any, config: RunnableConfig) -> Runnable:
        # Returning a runnable makes RunnableLambda invoke or stream it with the same input and config.
        # Node updates are streamed for the output's fields only: the working fields (hit lists, fused
        # and reranked passages, rows) made a stream 4-70x the size of the answer it led to.
        context = (config.get("configurable") or {}).get(RUN_CONTEXT_KEY)
        return graph.bind(context=context, output_keys=OUTPUT_FIELDS)

    return (RunnableLambda(as_graph_input, name="question") | RunnableLambda(in_run_context, name=graph.get_name())
            ).with_types(input_type=Question, output_type=OutputState)


"""The main graph: what `from context_engine import graph` gives, what Studio, LangServe and the CLI run.

    start_turn -> route -> (structured_query subgraph | retrieve | both in parallel) -> fuse -> rerank
               -> compress -> generate -> reflect -> (respond | retry: retrieve again, wider)

`fuse` is deferred so that, on the hybrid route, it runs once both halves have finished. Input: a
plain string, `{"question": ..., "now": ...}` or chat input `{"messages": [...]}`; output: the
answer appended to `messages` as an AIMessage, and `answer`, `citations`, `queries`, `records` and
`documents` for programmatic use. With a checkpointer, a thread remembers its turns and follow-up
questions are resolved against them.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime

from context_engine.assistant.context import Context, check_tenant_known, run_context
from context_engine.assistant.nodes import (
    after_reflect,
    branches,
    compress,
    fuse,
    generate,
    reflect,
    rerank,
    respond,
    retrieve,
    route,
    start_turn,
)
from context_engine.assistant.state import InputState, OutputState, State
from context_engine.assistant.structured_query import build_structured_graph, structured_graph

__all__ = ["ContextEngineGraph", "build_graph", "graph", "structured_query_graph"]


def as_graph_input(value: Any) -> Any:
    """A bare question string becomes `{"question": ...}`; anything else passes as it is."""
    return {"question": value} if isinstance(value, str) else value


def _parent_context() -> Any:
    """The context of the graph run this one is a node of (the graph used as a subgraph), if any."""
    try:
        parent = get_runtime()
    except RuntimeError:  # not inside a runnable: a run of its own
        return None
    context = getattr(parent, "context", None)
    return context if isinstance(context, (Context, dict)) else None


def prepare_run(config: RunnableConfig | None, context: Any) -> tuple[RunnableConfig, Context]:
    """The run's one Context (checked, legacy `configurable` keys folded in, its tenant known) and
    its config with the tenant and the asker in the run's metadata, which every child run and trace
    (LangSmith, callbacks) inherits."""
    run = run_context(_parent_context() if context is None else context, config)
    settings = run.settings()
    check_tenant_known(settings)
    who = {"tenant": settings.tenant, "user": settings.asker or ""}
    return merge_configs(config, {"metadata": who}), run


class ContextEngineGraph(CompiledStateGraph[State, Context, InputState, OutputState]):
    """The compiled StateGraph, which also takes a bare question string and prepares each run's
    context once (`invoke`, `stream`, `batch` and their async forms all go through `stream`/`astream`)."""

    def stream(self, input: Any, config: RunnableConfig | None = None, *, context: Any = None, **kwargs: Any):
        config, run = prepare_run(config, context)
        return super().stream(as_graph_input(input), config, context=run, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, *, context: Any = None, **kwargs: Any):
        # The tenant check may open the store: off the event loop (Studio's server refuses blocking calls).
        config, run = await asyncio.to_thread(prepare_run, config, context)
        async for chunk in super().astream(as_graph_input(input), config, context=run, **kwargs):
            yield chunk


def build_graph(
    checkpointer: Any = None, *, store: Any = None, name: str = "context_engine", **compile_kwargs: Any
) -> ContextEngineGraph:
    """Compile the main graph; pass a checkpointer (e.g. `InMemorySaver()`) for threads and follow-ups."""
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("start_turn", start_turn)
    builder.add_node("route", route)
    builder.add_node("structured_query", structured_graph)
    builder.add_node("retrieve", retrieve)
    builder.add_node("fuse", fuse, defer=True)
    builder.add_node("rerank", rerank)
    builder.add_node("compress", compress)
    builder.add_node("generate", generate)
    builder.add_node("reflect", reflect)
    builder.add_node("respond", respond)
    builder.add_edge(START, "start_turn")
    builder.add_edge("start_turn", "route")
    builder.add_conditional_edges("route", branches, ["structured_query", "retrieve"])
    builder.add_edge("structured_query", "fuse")
    builder.add_edge("retrieve", "fuse")
    builder.add_edge("fuse", "rerank")
    builder.add_edge("rerank", "compress")
    builder.add_edge("compress", "generate")
    builder.add_edge("generate", "reflect")
    builder.add_conditional_edges("reflect", after_reflect, {"retry": "retrieve", "done": "respond"})
    builder.add_edge("respond", END)
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=name, **compile_kwargs)
    compiled.__class__ = ContextEngineGraph  # same object: one more input form, each run's context prepared
    return cast(ContextEngineGraph, compiled)


graph = build_graph()


def build_structured_query_graph() -> ContextEngineGraph:
    """The structured subgraph as a graph of its own (`langgraph.json`'s second graph), its runs'
    context prepared like the main graph's: keys checked, the tenant known, tenant and asker in the
    run's metadata. A compilation of its own: the copy inside the main graph runs in the parent's."""
    compiled = build_structured_graph()
    compiled.__class__ = ContextEngineGraph
    return cast(ContextEngineGraph, compiled)


structured_query_graph = build_structured_query_graph()

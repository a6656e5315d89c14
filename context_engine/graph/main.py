"""The main graph and the entry point that accepts a plain string.

`context_graph` is the StateGraph Studio shows:

    route -> (structured_query | retrieve | both in parallel) -> fuse -> rerank -> compress
          -> generate -> reflect -> (done | retry: retrieve again with a rewritten, wider query)

The structured subgraph is a node of it. `fuse` is deferred so that, on the hybrid route, it runs once
both halves have finished. `graph` is a functional-API entry point around it, because a StateGraph
rejects a bare string: `graph.invoke("open PRs by Rashid")` and
`graph.invoke({"question": ..., "now": ...})` both work.
"""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime

from context_engine.graph.context import Context
from context_engine.graph.state import InputState, OutputState, State
from context_engine.graph.structured import structured_graph
from context_engine.nodes.compress import compress
from context_engine.nodes.fuse import fuse
from context_engine.nodes.generate import generate
from context_engine.nodes.reflect import after_reflect, reflect
from context_engine.nodes.rerank import rerank
from context_engine.nodes.retrieve import retrieve
from context_engine.nodes.route import branches, route


def build_graph():
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("route", route)
    builder.add_node("structured_query", structured_graph)
    builder.add_node("retrieve", retrieve)
    builder.add_node("fuse", fuse, defer=True)
    builder.add_node("rerank", rerank)
    builder.add_node("compress", compress)
    builder.add_node("generate", generate)
    builder.add_node("reflect", reflect)
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", branches, ["structured_query", "retrieve"])
    builder.add_edge("structured_query", "fuse")
    builder.add_edge("retrieve", "fuse")
    builder.add_edge("fuse", "rerank")
    builder.add_edge("rerank", "compress")
    builder.add_edge("compress", "generate")
    builder.add_edge("generate", "reflect")
    builder.add_conditional_edges("reflect", after_reflect, {"retry": "retrieve", "done": END})
    compiled = builder.compile()
    compiled.name = "context_engine"
    return compiled


context_graph = build_graph()


@entrypoint(context_schema=Context)
def graph(question: str | dict[str, Any]) -> dict[str, Any]:
    """Answer a question given as a string or as `{"question": ..., "now": ...}`."""
    inputs = {"question": question} if isinstance(question, str) else dict(question)
    return context_graph.invoke(inputs, context=get_runtime(Context).context)


graph.name = "context_engine_entrypoint"

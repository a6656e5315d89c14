"""The main graph and the entry point that accepts a plain string.

`context_graph` is the StateGraph Studio shows (the structured subgraph is a node of it);
`graph` is a functional-API entry point around it, because a StateGraph rejects a bare string:
`graph.invoke("open PRs by Rashid")` and `graph.invoke({"question": ..., "now": ...})` both work.
"""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime

from context_engine.graph.context import Context
from context_engine.graph.state import InputState, OutputState, State
from context_engine.graph.structured import structured_graph
from context_engine.nodes.respond import respond


def build_graph():
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("structured_query", structured_graph)
    builder.add_node("respond", respond)
    builder.add_edge(START, "structured_query")
    builder.add_edge("structured_query", "respond")
    builder.add_edge("respond", END)
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

"""The structured subgraph: resolve -> plan -> validate -> execute, with the retry edge to plan."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from context_engine.graph.context import Context
from context_engine.graph.state import StructuredState
from context_engine.nodes.structured import (after_check, execute_query, generate_query, give_up,
                                             resolve_question, validate_query)


def _resolved(state: StructuredState) -> str:
    return "failed" if state.get("outcome") == "resolution_failed" else "ok"


def build_structured_graph():
    builder = StateGraph(StructuredState, context_schema=Context)
    builder.add_node("resolve", resolve_question)
    builder.add_node("generate_query", generate_query)
    builder.add_node("validate_query", validate_query)
    builder.add_node("execute_query", execute_query)
    builder.add_node("give_up", give_up)
    builder.add_edge(START, "resolve")
    builder.add_conditional_edges("resolve", _resolved, {"ok": "generate_query", "failed": END})
    builder.add_conditional_edges("generate_query", _resolved, {"ok": "validate_query", "failed": END})
    builder.add_conditional_edges("validate_query", after_check,
                                  {"continue": "execute_query", "retry": "generate_query", "give_up": "give_up"})
    builder.add_conditional_edges("execute_query", after_check,
                                  {"continue": END, "retry": "generate_query", "give_up": "give_up"})
    builder.add_edge("give_up", END)
    graph = builder.compile()
    graph.name = "structured_query"
    return graph


structured_graph = build_structured_graph()

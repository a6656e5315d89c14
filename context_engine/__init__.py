"""context-engine: a relational context engine for engineering teams.

    from context_engine import graph, build_graph
    graph.invoke("open PRs by Rashid", context={"user": "rsh-dev"})

`graph` is the compiled LangGraph `StateGraph` (`build_graph()` with no checkpointer). Both are
imported lazily, so that the CLI's fast paths (help, bad input) do not pay for LangGraph.
"""

from typing import Any

__all__ = ["graph", "build_graph", "Context"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from context_engine.assistant import graph as graph_module
        from context_engine.assistant.context import Context

        return {"graph": graph_module.graph, "build_graph": graph_module.build_graph, "Context": Context}[name]
    raise AttributeError(name)

"""context-engine: a relational context engine for engineering teams.

`from context_engine import graph` gives the entry point; it is imported lazily so that the CLI's
fast paths (help, bad input) do not pay for LangGraph.
"""

from typing import Any

__all__ = ["graph"]


def __getattr__(name: str) -> Any:
    if name == "graph":
        from context_engine.graph.main import graph

        return graph
    raise AttributeError(name)

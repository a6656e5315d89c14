"""context-engine: a relational context engine for engineering teams.

    from context_engine import graph, build_graph
    graph.invoke("open PRs by Rashid", context={"user": "rsh-dev"})

`graph` is the compiled LangGraph `StateGraph` (`build_graph()` with no checkpointer). Both are
imported lazily, so that the CLI's fast paths (help, bad input) do not pay for LangGraph; so is
`__version__`, which reads the installed distribution's metadata.

The distribution is `relational-context-engine` on PyPI: `context-engine` there is an unrelated project
that also ships a top-level `context_engine` package (see `other_distributions`).
"""

from typing import Any

DISTRIBUTION = "relational-context-engine"

__all__ = ["DISTRIBUTION", "Context", "build_graph", "graph", "other_distributions"]


def other_distributions() -> list[str]:
    """The installed distributions other than ours that also provide the `context_engine` package.

    Two distributions writing one package directory overwrite each other's files, and uninstalling
    either deletes files of the other; an empty list is the only healthy answer. Run from a source
    tree that no distribution installed, it is empty as well. It scans every installed distribution's
    metadata (tens of milliseconds), so only `context-engine status` asks.
    """
    import re
    from importlib.metadata import packages_distributions

    claimants = packages_distributions().get("context_engine", [])
    # PEP 503 normalisation: "Relational_Context.Engine" is the same distribution as ours
    return sorted({name for name in claimants if re.sub(r"[-_.]+", "-", name).lower() != DISTRIBUTION})


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree that was never installed under this name
            return "unknown"
    if name in ("graph", "build_graph", "Context"):
        from context_engine.assistant import graph as graph_module
        from context_engine.assistant.context import Context

        return {"graph": graph_module.graph, "build_graph": graph_module.build_graph, "Context": Context}[name]
    raise AttributeError(name)

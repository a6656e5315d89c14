"""The package's layering: no import runs back up a layer, and no two modules share a name."""

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "context_engine"

# Lowest first. A module may import its own layer and the layers below it, never above.
LAYERS = {
    "text": 0,
    "config": 0,
    "access": 0,
    "chat_models": 0,
    "prompts": 0,
    "kinds": 0,  # the floor
    "store": 1,
    "sources": 2,  # connectors: source records in, normalized records out
    "query": 3,
    "retrievers": 3,  # the structured half and the semantic half, as plain Python
    "answering": 4,  # routing, answers, grounding, links, follow-ups
    "resources": 5,  # process-wide resources (stores, catalogs, indexes, models)
    "ingest": 6,  # the one place that writes: store, people, catalogs, index
    "assistant": 7,  # the graph layer: state, context, nodes, builders
    "service": 8,  # every operation a surface offers, once (ask, query, search, ...)
    "cli": 9,
    "server": 9,
    "mcp_server": 9,
    "eval": 9,  # the surfaces and the evaluations
    "__main__": 10,
    "__init__": 10,
}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if parts[0] == "context_engine" and len(parts) > 1 else None


def _modules():
    for path in PACKAGE.rglob("*.py"):
        yield "context_engine." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts), path


def test_every_module_has_a_layer():
    assert all(_layer(module) is not None for module, _ in _modules() if module.count(".") >= 1)


def test_no_import_runs_back_up_a_layer():
    upward = []
    for module, path in _modules():
        mine = _layer(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("context_engine."):
                theirs = _layer(node.module)
                if mine is not None and theirs is not None and theirs > mine:
                    upward.append(f"{module} -> {node.module}")
    assert upward == []


def test_no_two_modules_share_a_name():
    names = Counter(path.stem for _, path in _modules() if path.stem != "__init__")
    assert [name for name, n in names.items() if n > 1] == []


# ------------------------------------------------------------------------------- surfaces are thin
# A surface (the terminal, the LangServe server, MCP; `server` may be a package) parses its input,
# calls the engine service and presents the result. Of the package it imports only these: the service
# (every operation, its result types and the errors it raises), the graph LangGraph users run and its
# run context (LangServe and Studio serve that graph itself), the configuration, and the package's identity.
SURFACES = ("cli", "server", "mcp_server")
SURFACE_MAY_IMPORT = (
    "context_engine.service",
    "context_engine.assistant.graph",
    "context_engine.assistant.context",
    "context_engine.assistant.state",  # the graph's output type, which LangServe declares
    "context_engine.config",
    # the package's identity: its distribution name and who else claims the package
    "context_engine.DISTRIBUTION",
    "context_engine.other_distributions",
)

# Exceptions, each with its reason. An entry no import needs any more fails
# `test_no_surface_keeps_an_exception_it_does_not_use`, so the lists only shrink.
SURFACE_EXCEPTIONS: dict[str, dict[str, str]] = {
    "cli": {
        "context_engine.eval": "the `eval` commands run the evaluations, a surface of their own",
        "context_engine.server": "`serve` starts the LangServe server",
        "context_engine.mcp_server": "`mcp` starts the MCP server",
        "context_engine.chat_models": "`eval retrieval` and `eval rag` build the judge / LLM reranker model they score with",
        "context_engine.retrievers.dense": "`eval rag` hands RAGAS the embeddings of its answer-relevancy metric",
        "context_engine.sources.connectors": "the parser lists the sources in `ingest --help`, before anything "
        "heavy is imported (importing the service loads the engine)",
    },
}


def _surface(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SURFACES else None


def _imports(path: Path) -> list[str]:
    """Every package module a file imports, `from context_engine import service` as `context_engine.service`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "context_engine":
            found += [f"context_engine.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("context_engine."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("context_engine.")]
    return found


def _within(module: str, allowed: str) -> bool:
    return module == allowed or module.startswith(allowed + ".")


def _surface_imports() -> dict[str, set[str]]:
    """Per surface, the package modules it imports from outside itself."""
    out: dict[str, set[str]] = {surface: set() for surface in SURFACES}
    for module, path in _modules():
        surface = _surface(module)
        if surface is not None:
            out[surface] |= {m for m in _imports(path) if _surface(m) != surface}
    return out


def test_surfaces_import_only_the_service_the_graph_and_the_configuration():
    wrong = [
        f"{surface} -> {module}"
        for surface, modules in _surface_imports().items()
        for module in sorted(modules)
        if not any(_within(module, allowed) for allowed in (*SURFACE_MAY_IMPORT, *SURFACE_EXCEPTIONS.get(surface, {})))
    ]
    assert wrong == []


def test_no_surface_keeps_an_exception_it_does_not_use():
    imports = _surface_imports()
    unused = [
        f"{surface}: {allowed}"
        for surface, allowed_here in SURFACE_EXCEPTIONS.items()
        for allowed in allowed_here
        if not any(_within(module, allowed) for module in imports[surface])
    ]
    assert unused == []


def test_the_surface_rule_sees_every_form_of_import(tmp_path):
    """The rule reads `from context_engine import x`, `from context_engine.x import y` and `import context_engine.x`."""
    path = tmp_path / "surface.py"
    path.write_text(
        "from context_engine import resources, service\n"
        "from context_engine.store.documents import open_store\n"
        "import context_engine.query.execute\nimport json\n",
        encoding="utf-8",
    )
    assert _imports(path) == [
        "context_engine.resources",
        "context_engine.service",
        "context_engine.store.documents",
        "context_engine.query.execute",
    ]

"""The package's layering: no import runs back up a layer, and no two modules share a name."""

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "context_engine"

# Lowest first. A module may import its own layer and the layers below it, never above.
LAYERS = {
    "text": 0, "config": 0, "access": 0, "models": 0, "prompts": 0, "kinds": 0,  # the floor
    "store": 1,
    "sources": 2,               # connectors: source records in, normalized records out
    "query": 3, "retrievers": 3,  # the structured half and the semantic half, as plain Python
    "answering": 4,             # routing, answers, grounding, links, follow-ups
    "runtime": 5,               # process-wide resources (stores, catalogs, indexes, models)
    "ingest": 6,                # the one place that writes: store, people, catalogs, index
    "assistant": 7,             # the graph layer: state, context, nodes, builders
    "service": 8,               # every operation a surface offers, once (ask, query, search, ...)
    "cli": 9, "server": 9, "mcp_server": 9, "eval": 9,  # the surfaces and the evaluations
    "__main__": 10, "__init__": 10,
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

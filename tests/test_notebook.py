"""notebooks/walkthrough.ipynb executes top to bottom (offline) and shows what its text promises."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "walkthrough.ipynb"


@pytest.fixture(scope="module")
def executed():
    with pytest.MonkeyPatch.context() as env:
        # The kernel inherits this process's environment: keep it offline and on the embedded store.
        for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MONGODB_URI"):
            env.delenv(name, raising=False)
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
        ).execute()
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def text_of(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def cell_running(cells, snippet: str):
    return next(cell for cell in cells if snippet in cell.source)


def test_questions_take_the_structured_semantic_and_hybrid_routes(executed):
    structured = text_of(cell_running(executed, 'ask("PRs Rashid merged last week")'))
    assert "route: structured" in structured
    assert "query on pull_requests" in structured and "attempt 1: accepted" in structured
    semantic = text_of(cell_running(executed, "why did we switch the session cache to Redis?"))
    assert "route: semantic" in semantic and "search 'why did we switch" in semantic
    assert "acme/infra#812" in semantic
    hybrid = text_of(cell_running(executed, "duplicate charges in payments"))
    assert "route: hybrid" in hybrid
    assert "query on pull_requests" in hybrid and "search 'what happened with the duplicate charges" in hybrid


def test_retry_trace_lists_every_round(executed):
    lines = text_of(cell_running(executed, "graph.stream(")).splitlines()
    nodes = [line.split(":")[0] for line in lines if line and not line.startswith("retrievals")]
    assert nodes[:2] == ["start_turn", "route"] and nodes[-2:] == ["reflect", "respond"]
    retrievals = int(re.search(r"retrievals: (\d+)", "\n".join(lines)).group(1))
    assert retrievals == nodes.count("retrieve") == nodes.count("reflect") >= 1
    # Every round but the last ends in a retry that names the next search.
    assert sum("reflect: retry, next search" in line for line in lines) == retrievals - 1


def test_graph_is_drawn_with_the_structured_subgraph(executed):
    cell = cell_running(executed, "draw_mermaid()")
    markdown = "".join(out["data"].get("text/markdown", "") for out in cell.outputs if "data" in out)
    assert markdown.startswith("```mermaid")
    for node in ("route", "retrieve", "fuse", "reflect", "structured_query", "execute_query"):
        assert node in markdown


def test_evaluation_reports_accuracy_and_draws_its_chart(executed):
    cell = cell_running(executed, "evaluate(QUESTIONS")
    text = text_of(cell)
    correct, total = map(int, re.search(r"accuracy \d+% \((\d+)/(\d+)\)", text).groups())
    assert total == 10
    assert correct == sum(line.startswith("ok ") for line in text.splitlines())
    assert any("image/png" in out.get("data", {}) for out in cell.outputs)

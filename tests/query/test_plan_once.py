"""A question is planned offline once: the router's plan is carried in the graph state and the
structured subgraph's first attempt starts from it (it used to be built up to three times)."""

from __future__ import annotations

from context_engine import graph
from context_engine.query.offline import OfflinePlanner
from tests.conftest import NOW


def test_the_graph_plans_a_question_once_and_outputs_what_it_understood(sample_dir, monkeypatch):
    calls = []
    planned = OfflinePlanner.plan
    monkeypatch.setattr(OfflinePlanner, "plan", lambda self, ctx: calls.append(ctx.question) or planned(self, ctx))
    out = graph.invoke(
        {"question": "how many open PRs with a purple hat", "now": NOW.isoformat()},
        context={"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False},
    )
    assert calls == ["how many open PRs with a purple hat"]
    assert [s["text"] for s in out["not_understood"]] == ["purple hat"]
    assert {s["how"] for s in out["understood"]} >= {"collection", "shape", "value"}
    assert out["confidence"] < 0.7
    assert out["answer"].endswith("I did not understand: 'purple hat' — the answer ignores it.")


def test_a_plain_structured_question_is_understood_whole(sample_dir):
    out = graph.invoke(
        {"question": "how many open PRs are there?", "now": NOW.isoformat()},
        context={"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False},
    )
    assert out["not_understood"] == [] and out["confidence"] == 1.0
    assert "did not understand" not in out["answer"]

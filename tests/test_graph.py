from context_engine.graph.main import context_graph, graph
from context_engine.graph.structured import structured_graph

NOW = "2026-11-30T12:00:00Z"


def _context(sample_dir, **extra):
    return {"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False, **extra}


def test_graph_accepts_a_plain_string_and_a_dict(sample_dir):
    as_string = graph.invoke("how many open PRs are there?", context=_context(sample_dir))
    as_dict = graph.invoke({"question": "how many open PRs are there?", "now": NOW}, context=_context(sample_dir))
    assert as_string["records"] == as_dict["records"] and as_dict["records"][0]["count"] > 0
    assert as_dict["route"] == "structured" and "pull requests match" in as_dict["answer"]


def test_asker_comes_from_the_run_context(sample_dir):
    mine = graph.invoke({"question": "open issues assigned to me", "now": NOW},
                        context=_context(sample_dir, user="priyar"))
    assert mine["records"] and all(r["fields"]["assignee"]["name"] == "praman" for r in mine["records"])


def test_graph_shows_the_structured_subgraph_and_its_retry_edge():
    drawn = context_graph.get_graph(xray=True).draw_mermaid()
    for node in ("resolve", "generate_query", "validate_query", "execute_query", "generate"):
        assert node in drawn
    edges = {(e.source, e.target) for e in structured_graph.get_graph().edges}
    assert ("validate_query", "generate_query") in edges and ("execute_query", "generate_query") in edges
    assert context_graph.name == "context_engine"


def test_later_nodes_reuse_the_resolved_tie_instead_of_asking_again(settings):
    from context_engine.nodes.structured import _tiebreak
    from context_engine.runtime import catalog_for

    (mention,) = catalog_for(settings).directory.find_mentions("PRs Alex merged")
    state = {"question": "PRs Alex merged", "resolution": {"people": [{"person": {"key": "amorgan-dev"}}]}}
    assert _tiebreak(state, planner=None)("PRs Alex merged", mention).key == "amorgan-dev"
    assert _tiebreak({"question": "x"}, planner=None) is None  # before resolve: no model, no guess

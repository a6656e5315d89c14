"""Execution accuracy of the offline planner on the question sets in tests/data, as a ratchet.

`structured_dev*.jsonl` were tuned on; `structured_heldout.jsonl` was written by a separate author
before any tuning and is only measured; `github_dev.jsonl` runs over the real GitHub dump. Every
question that passed when `tests/data/ratchet.json` was recorded must still pass: a planner change
may win questions (add their ids there), never lose one. The measured figures are in the README
(`context-engine eval structured --questions FILE`).
"""

import pytest

from context_engine.eval.structured import evaluate
from tests.conftest import TEST_DATA_DIR, needs_github_dump, tenant_settings
from tests.query.conftest import lost

DATA = TEST_DATA_DIR


@pytest.mark.parametrize(
    "name", ["structured_dev", "structured_dev2", "structured_dev3", "structured_dev4", "structured_heldout"]
)
def test_offline_planner_keeps_every_question_it_answered(settings, name):
    report = evaluate(DATA / f"{name}.jsonl", settings, planner="offline")
    assert len(report.results) >= 60
    assert lost(report, name) == []


@needs_github_dump
def test_offline_planner_keeps_every_github_question_it_answered(real_sources_dir):
    report = evaluate(DATA / "github_dev.jsonl", tenant_settings(real_sources_dir, "hf"), planner="offline")
    assert lost(report, "github_dev") == []

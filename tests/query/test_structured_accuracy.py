"""Execution accuracy of the offline planner on the question sets in tests/data, as a ratchet.

`structured_dev*.jsonl` were tuned on; `structured_heldout.jsonl` was written by a separate author
before any tuning and is only measured; `github_dev.jsonl` runs over the real GitHub dump. Every
question that passed when `tests/data/ratchet.json` was recorded must still pass: a planner change
may win questions (add their ids there), never lose one. The measured figures are in the README
(`context-engine eval structured --questions FILE`).
"""

import json
from pathlib import Path

import pytest

from context_engine.config import Settings
from context_engine.eval.structured import evaluate
from tests.conftest import GITHUB_DUMP, run_cli

DATA = Path(__file__).parent / "data"
RATCHET = json.loads((DATA / "ratchet.json").read_text())


def lost(report, name: str) -> list[tuple[str, str, str]]:
    """The questions that passed when the ratchet was recorded and fail now."""
    failing = {r.id: r for r in report.results if not r.correct}
    assert {r.id for r in report.results} >= set(RATCHET[name]), "a ratchet id is no longer in the question file"
    return [(i, failing[i].question, failing[i].detail) for i in RATCHET[name] if i in failing]


@pytest.mark.parametrize("name", ["structured_dev", "structured_dev2", "structured_dev3", "structured_dev4",
                                  "structured_heldout"])
def test_offline_planner_keeps_every_question_it_answered(settings, name):
    report = evaluate(DATA / f"{name}.jsonl", settings, planner="offline")
    assert len(report.results) >= 60
    assert lost(report, name) == []


@pytest.fixture(scope="module")
def github_settings(tmp_path_factory) -> Settings:
    data_dir = tmp_path_factory.mktemp("github-questions")
    out = run_cli("ingest", "github", str(GITHUB_DUMP), "--no-index", "--public", "--data-dir", str(data_dir),
                  "--tenant", "hf")
    assert out.returncode == 0, out.stderr
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant="hf", asker=None, use_llm=False)


@pytest.mark.skipif(not GITHUB_DUMP.exists(), reason="no GitHub dump in $CONTEXT_ENGINE_EVAL_DATA")
def test_offline_planner_keeps_every_github_question_it_answered(github_settings):
    assert lost(evaluate(DATA / "github_dev.jsonl", github_settings, planner="offline"), "github_dev") == []

"""Execution accuracy of the offline planner on the held-out set (tests/data, written before tuning).

The floor guards against regressions; the measured figure and the target (90%) are in the issue note.
"""

from pathlib import Path

from context_engine.eval.structured import evaluate

QUESTIONS = Path(__file__).parent / "data" / "structured_dev.jsonl"


def test_offline_planner_accuracy_on_held_out_questions(settings):
    report = evaluate(QUESTIONS, settings, planner="offline")
    assert len(report.results) >= 60
    assert report.accuracy >= 0.85, report.to_json()["failures"][:5]

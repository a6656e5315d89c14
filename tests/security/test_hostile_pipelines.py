"""The hostile-pipeline corpus (tests/security/hostile_cases.py, 240 cases) against the validator and
bounded, scoped execution, run the way `context-engine query` runs a pipeline.

Every case ends in <= 2 s and <= 300 MB of extra memory, never crashes, never returns another
tenant's or a private record (checked by their refs and texts) or a hidden field at any depth; the
escape attempts are refused by the validator outright."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[list[dict], dict]:
    data = tmp_path_factory.mktemp("hostile") / "data"
    ingest = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "ingest", "sample", "--data-dir", str(data), "--no-index"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ingest.returncode == 0, ingest.stderr
    run = subprocess.run(
        [sys.executable, str(HERE / "hostile_runner.py"), str(data)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    return rows[:-1], rows[-1]


def test_the_corpus_is_large_and_the_leak_check_has_something_to_find(results):
    cases, summary = results
    assert summary["cases"] == len(cases) >= 150
    assert summary["forbidden_markers"] > 100  # globex's records and #security-private's, by ref and text


def test_no_case_crashes_or_leaks(results):
    cases, _ = results
    assert [c for c in cases if c["outcome"] == "crash" or c["leak"]] == []


def test_every_escape_attempt_is_refused_by_the_validator(results):
    cases, _ = results
    assert [c for c in cases if c["expect"] == "reject" and c["outcome"] != "rejected"] == []


def test_every_case_ends_fast_and_small(results):
    cases, summary = results
    assert summary["worst_seconds"] <= 2.0, max(cases, key=lambda c: c["seconds"])
    assert summary["extra_rss_mb"] <= 300


def test_rejections_are_one_actionable_sentence(results):
    cases, _ = results
    for case in cases:
        if case["outcome"] == "rejected":
            assert "\n" not in case["detail"] and len(case["detail"]) > 20, case

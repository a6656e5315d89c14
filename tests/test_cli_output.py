"""The CLI piped (a log, a CI job, `| less`): tables as wide as their rows, and progress as plain lines
every few seconds, never rich bars and never silence through a long run."""

from __future__ import annotations

import os

import pytest

from context_engine import cli
from context_engine.config import Settings
from tests.conftest import run_cli


class _Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_short_run_stays_quiet_and_a_long_one_says_where_it_is(capsys):
    clock = _Clock()
    with cli._Stages({"ask": ("asking the graph", 10), "score": ("scoring (RAGAS)", 10)}, clock=clock) as stages:
        for second in (1, 2, 3, 4):  # nothing in the first few seconds
            clock.now = second
            stages.advance("ask")
        assert capsys.readouterr().err == ""
        for second in (5, 6, 7, 8, 9, 10):  # then a line every PLAIN_PROGRESS_EVERY seconds, not one per step
            clock.now = second
            stages.advance("ask")
        for _ in range(10):  # a stage that never waited long says nothing, even when it is done
            stages.advance("score")
    assert capsys.readouterr().err.splitlines() == ["asking the graph 5/10", "asking the graph 10/10"]


def test_ingest_progress_piped_is_the_embedding_in_plain_lines(capsys):
    clock = _Clock()
    report = cli._Progress(clock=clock).__enter__()
    clock.now = 30
    report("acme: pull_requests", 120)  # reading is fast: a count would only crowd warnings and errors
    report("acme: chunks to embed", 300)
    for done, second in ((64, 31), (128, 36), (192, 37), (300, 38)):
        clock.now = second
        report("acme: embedded", done)
    # every 5 s at most, and the embedding's end once it has said something
    assert capsys.readouterr().err.splitlines() == ["  acme: embedded 128/300", "  acme: embedded 300/300"]
    clock.now = 100
    report("globex: chunks to embed", 10)
    report("globex: embedded", 10)  # embedded within seconds: nothing to say
    assert capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def structured_dir(tmp_path_factory):
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    data_dir = tmp_path_factory.mktemp("sample-no-index")
    ingest(Settings(data_dir=data_dir, mongodb_uri=None), generate(), index=False)
    return data_dir


def _people(data_dir, columns: str | None):
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    done = run_cli("people", "--data-dir", str(data_dir), "--tenant", "acme", env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_piped_table_is_as_wide_as_its_rows_and_columns_is_respected(structured_dir, monkeypatch):
    wide = _people(structured_dir, None)
    assert 80 < max(map(len, wide)) <= cli.PIPED_WIDTH  # rich alone would have wrapped at 80
    narrow = _people(structured_dir, "100")
    assert max(map(len, narrow)) <= 100 and len(narrow) > len(wide)  # what the user asked for: wrapped at 100
    monkeypatch.delenv("COLUMNS", raising=False)
    assert cli._console().width == cli.PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "132")
    assert cli._console().width == 132

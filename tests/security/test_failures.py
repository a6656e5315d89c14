"""Class 11: damaged or missing derived state gives one line and a non-zero exit, never a
traceback, and the next ingest repairs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

QUESTION = "why did we switch the session cache to Redis?"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", *args], capture_output=True, text=True, timeout=300
    )


def _one_line_error(out: subprocess.CompletedProcess, *words: str) -> None:
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode not in (0, 1) and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert all(word in lines[0] for word in words), lines[0]


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("failures") / "data"
    out = _cli("ingest", "sample", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    return data


def _copy(sample_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    shutil.copytree(sample_dir, data)
    [gen] = [p for p in (data / "index" / "acme").iterdir() if p.name.startswith("gen-")]
    return data, gen


@pytest.mark.slow
@pytest.mark.parametrize("damaged", ["manifest.json", "chunks.json", "bm25.npz", "dense/index.faiss"])
def test_a_damaged_index_is_one_line_and_reingest_repairs_it(sample_dir, tmp_path, damaged):
    data, gen = _copy(sample_dir, tmp_path)
    target = gen / damaged
    target.write_bytes(target.read_bytes()[:100])
    _one_line_error(_cli("ask", QUESTION, "--data-dir", str(data)), "damaged", "re-run")
    assert _cli("ingest", "sample", "--data-dir", str(data)).returncode == 0
    out = _cli("ask", QUESTION, "--data-dir", str(data))
    assert out.returncode == 0 and "Redis" in out.stdout, out.stderr


def test_a_content_question_on_a_tenant_without_index_is_one_line(tmp_path):
    data = tmp_path / "data"
    assert _cli("ingest", "sample", "--data-dir", str(data), "--no-index").returncode == 0
    _one_line_error(_cli("ask", QUESTION, "--data-dir", str(data)), "no semantic index")


def test_a_damaged_catalog_is_rebuilt(sample_dir, tmp_path):
    data, _ = _copy(sample_dir, tmp_path)
    (data / "catalog" / "acme.json").write_text("{not json")
    out = _cli("query", "pull_requests", '[{"$count": "n"}]', "--data-dir", str(data))
    assert out.returncode == 0 and '"n"' in out.stdout, out.stderr


def test_an_unwritable_catalog_still_answers(sample_dir, tmp_path):
    data, _ = _copy(sample_dir, tmp_path)
    catalog = data / "catalog" / "acme.json"
    catalog.unlink()
    catalog.mkdir()  # a directory where the file must go: unreadable and unwritable, even for root
    (catalog / "x").write_text("")
    out = _cli("query", "pull_requests", '[{"$count": "n"}]', "--data-dir", str(data))
    assert out.returncode == 0 and '"n"' in out.stdout, out.stderr  # built in memory for this run

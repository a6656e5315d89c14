"""A CSV export is read within the record cap and fails in one line. Found by the red team: a Linear
CSV export whose one description is longer than 128 KB (csv's default field limit; a real long
issue) was a `_csv.Error` traceback, exit 1, for the whole ingest; a people CSV likewise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _ingest(kind: str, path: Path, data: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "ingest", kind, str(path), "--data-dir", str(data), "--no-index"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_a_long_description_in_a_linear_csv_is_a_record(tmp_path):
    export = tmp_path / "linear.csv"
    export.write_text('ID,Title,Description\nENG-1,Long,"' + "word " * 60_000 + '"\nENG-2,Short,fine\n')
    out = _ingest("linear", export, tmp_path / "data")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-1500:]
    assert "issues 2+0~0" in out.stdout, out.stdout


def test_a_field_past_the_record_cap_is_one_line(tmp_path):
    import os

    export = tmp_path / "linear.csv"
    export.write_text("ID,Title,Description\nENG-1,Huge," + "x" * (2 << 20) + "\nENG-2,Short,fine\n")
    out = _ingest("linear", export, tmp_path / "data", env={**os.environ, "CONTEXT_ENGINE_MAX_RECORD_MB": "1"})
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "cannot be read as CSV" in lines[0], out.stderr[-1500:]


def test_a_people_csv_with_a_long_cell_is_read(tmp_path):
    people = tmp_path / "people.csv"
    people.write_text("name,github,aliases\nAna,ana-dev," + ";".join(f"alias{i}" for i in range(20_000)) + "\n")
    out = _ingest("people", people, tmp_path / "data")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-1500:]

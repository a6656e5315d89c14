"""Class 12: archives and files have member, ratio and total caps; a bomb is a fast one-line
refusal (or one skipped, counted file), never hundreds of MB in memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

EXPORT = {
    "users.json": [{"id": "U1", "name": "ann", "real_name": "Ann"}],
    "channels.json": [{"id": "C1", "name": "general", "members": ["U1"]}],
    "general/2024-01-01.json": [{"type": "message", "user": "U1", "text": "hello", "ts": "1704100000.000100"}],
}


def _export_zip(path: Path, bomb_name: str | None = None, bomb_mb: int = 0, incompressible: bool = False) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, value in EXPORT.items():
            zf.writestr(name, json.dumps(value))
        if bomb_name:
            with zf.open(bomb_name, "w", force_zip64=True) as member:
                block = os.urandom(1 << 20) if incompressible else b" " * (1 << 20)
                member.write(b"[")
                for _ in range(bomb_mb):
                    member.write(block)
                member.write(b"]")
    return path


def _ingest(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI in a child and report its peak RSS in MB (ru_maxrss of the waited child)."""
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
            "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); sys.exit(p.returncode)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "context_engine.cli", "ingest", *args,
                          "--data-dir", str(tmp_path / "data"), "--no-index"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    rss = int(out.stdout.rsplit("MAXRSS", 1)[1])
    return out, rss


@pytest.mark.slow
def test_a_zip_bomb_member_is_skipped_without_inflating(tmp_path):
    bomb = _export_zip(tmp_path / "bomb.zip", "general/2024-01-02.json", bomb_mb=700)
    assert bomb.stat().st_size < 2 << 20  # ~700 MB of JSON in a ~1 MB zip
    out, rss = _ingest(tmp_path, "slack", str(bomb))
    assert out.returncode == 0, out.stderr
    assert "1 skipped" in out.stdout and "Traceback" not in out.stderr
    assert "2024-01-02.json" in out.stderr and "over the 256 MB cap" in out.stderr
    assert rss < 300, f"peak RSS {rss} MB"


def test_a_highly_compressed_member_is_refused_as_a_bomb(tmp_path):
    export = _export_zip(tmp_path / "ratio.zip", "general/2024-01-05.json", bomb_mb=20)
    out, _ = _ingest(tmp_path, "slack", str(export))
    assert out.returncode == 0 and "zip bomb" in out.stderr and "1 skipped" in out.stdout, out.stderr


def test_a_member_over_the_size_cap_is_skipped_and_counted(tmp_path):
    export = _export_zip(tmp_path / "big.zip", "general/2024-01-03.json", bomb_mb=3, incompressible=True)
    out, _ = _ingest(tmp_path, "slack", str(export), env={"CONTEXT_ENGINE_MAX_FILE_MB": "2"})
    assert out.returncode == 0, out.stderr
    assert "over the 2 MB cap" in out.stderr and "1 skipped" in out.stdout


def test_an_archive_over_the_total_cap_is_refused_in_one_line(tmp_path):
    export = _export_zip(tmp_path / "total.zip", "general/2024-01-04.json", bomb_mb=3, incompressible=True)
    out, _ = _ingest(tmp_path, "slack", str(export), env={"CONTEXT_ENGINE_MAX_ARCHIVE_MB": "2"})
    assert out.returncode != 0
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "over the 2 MB cap" in lines[0], out.stderr


def test_a_gzip_bomb_dump_is_cut_at_the_cap(tmp_path):
    dump = tmp_path / "dump.jsonl.gz"
    with gzip.open(dump, "wb", compresslevel=1) as fh:
        for _ in range(5):
            fh.write(b" " * (1 << 20))
    out, _ = _ingest(tmp_path, "github", str(dump), env={"CONTEXT_ENGINE_MAX_FILE_MB": "2"})
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "cap" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr

"""A FIFO (or a device, or a folder) where the data dir's derived files belong never hangs a reader.
Found by the red team: a FIFO in place of a tenant's catalog (`catalog/acme.json`), its index pointer
(`index/acme/CURRENT`) or any file of its index generation (manifest, chunks, BM25, dense) made every
`ask` and `query` of that tenant block forever in `open()`, and `status` block on a FIFO lock file
(a server's worker threads would pile up behind it, whichever tenant they serve). Now each is a
damaged file: the catalog is rebuilt, the index is a one-line error (the next ingest rebuilds it),
and the other tenant answers as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

QUESTION = "why did we switch the session cache to Redis?"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", *args], capture_output=True, text=True, timeout=60
    )


def _generation(data: Path) -> str:
    return "index/acme/" + (data / "index/acme/CURRENT").read_text().strip()


@pytest.mark.parametrize(
    "name",
    [
        "catalog/acme.json",
        "index/acme/CURRENT",
        "GEN/manifest.json",
        "GEN/chunks.json",
        "GEN/bm25.npz",
        "GEN/dense/meta.json",
        "GEN/dense/index.faiss",
        "writer.lock",
    ],
)
def test_a_fifo_in_the_data_dir_is_a_damaged_file_not_a_hang(sample_dir, tmp_path, name):
    data = tmp_path / "data"
    shutil.copytree(sample_dir, data)
    path = data / name.replace("GEN", _generation(data))
    assert path.is_file(), path
    path.unlink()
    os.mkfifo(path)
    for args in (["ask", QUESTION, "--as", "rsh-dev"], ["query", "pull_requests", '[{"$count": "n"}]'], ["status"]):
        try:
            out = _cli(*args, "--data-dir", str(data))
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(args[:1])} blocked on the FIFO {name}")
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert "Traceback" not in out.stderr and (out.returncode == 0 or len(lines) == 1), out.stderr
    other = _cli("ask", QUESTION, "--data-dir", str(data), "--tenant", "globex")
    assert other.returncode == 0, other.stderr
    if name.startswith("catalog/"):
        assert _cli("query", "pull_requests", '[{"$count": "n"}]', "--data-dir", str(data)).returncode == 0

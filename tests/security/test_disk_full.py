"""Class 7 (faults stay local): a disk that fills up during an ingest is one line on stderr and exit 4
("the data dir cannot be read or written"), never a traceback nor a second "cannot rollback" error,
and the data stays whole: the store answers exactly as after the previous commit (or, when the disk
filled only after the commit, as after this one), and once there is room again the next ingest lands.

The disk is really full: a small tmpfs mounted for the test (CI runs as root), or, where mounting is not
permitted, a file size limit (RLIMIT_FSIZE) on the ingest process, which SQLite meets as a full disk."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from context_engine.config import Settings
from context_engine.store.documents import open_store
from tests.conftest import run_cli

DOCS = 120  # Markdown files the failing ingest adds: ~2 MB of rows, more than the room left


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> dict[str, Path]:
    """A data dir holding the sample organisation (no semantic index), and a folder of documents."""
    root = tmp_path_factory.mktemp("diskfull")
    data = root / "data"
    out = run_cli("ingest", "sample", "--data-dir", str(data), "--no-index")
    assert out.returncode == 0, out.stderr
    docs = root / "docs"
    docs.mkdir()
    for i in range(DOCS):
        (docs / f"note-{i}.md").write_text(f"# Note {i}\n\n" + " ".join(f"word{j}-{i}" for j in range(1500)) + "\n")
    return {"data": data, "docs": docs}


@pytest.fixture
def small_fs(tmp_path):
    """A 64 MB tmpfs at tmp_path/mnt, unmounted afterwards (room for the data dir, its derived indexes and a probe copy)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here ({mounted.stderr.strip()}); "
            "test_a_file_size_limit_is_a_full_disk_too covers the same path"
        )
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(mnt: Path, leave_kib: int) -> Path:
    """Take all the room of the filesystem at `mnt` but `leave_kib` KiB."""
    filler = mnt / "filler"
    stat = os.statvfs(mnt)
    room = stat.f_bavail * stat.f_frsize - leave_kib * 1024
    with open(filler, "wb") as out:
        os.posix_fallocate(out.fileno(), 0, room)
    return filler


def _stored(data: Path) -> int:
    """acme's documents that the whole tenant reads, as the store holds them (read in this process)."""
    return (
        open_store(Settings(data_dir=data, mongodb_uri=None))
        .collection("documents")
        .count_documents({"tenant_id": "acme", "acl": "*"})
    )


def _answered(data: Path) -> int:
    """acme's documents as `context-engine query` counts them."""
    out = run_cli("query", "documents", '[{"$count": "n"}]', "--data-dir", str(data), "--tenant", "acme")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return json.loads(out.stdout)["records"][0]["n"]


def _one_line_exit_4(out: subprocess.CompletedProcess, *says: str) -> None:
    lines = out.stderr.splitlines()
    assert out.returncode == 4 and len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr and "cannot rollback" not in out.stderr
    assert all(words in lines[0] for words in says), lines[0]


def _ingest_docs(data: Path, docs: Path, **popen) -> subprocess.CompletedProcess:
    """The documents as the whole tenant's (`--public`), so that the count the store answers shows them."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "ingest",
            "docs",
            str(docs),
            "--data-dir",
            str(data),
            "--tenant",
            "acme",
            "--public",
            "--no-index",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""},
        **popen,
    )


def _growth(small_fs: Path, prepared: dict[str, Path]) -> tuple[int, int]:
    """KiB the ingest adds to the store's files and then to the link index's, measured on a copy with room."""
    probe = small_fs / "probe"
    shutil.copytree(prepared["data"], probe)
    sizes = lambda name: sum(f.stat().st_size for f in probe.glob(f"{name}*")) // 1024  # noqa: E731
    _stored(probe)  # as the test does before filling the disk (its connection's close checkpoints the WAL)
    store, links = sizes("store.sqlite"), sizes("links.sqlite")
    assert _ingest_docs(probe, prepared["docs"]).returncode == 0
    growth = sizes("store.sqlite") - store, sizes("links.sqlite") - links
    shutil.rmtree(probe)
    return growth


# Room left on the tmpfs: less than the new rows need (the commit's own transaction meets the full disk:
# the case the red team met), or room for the commit and half what the link index written after it
# needs (measured first, so that a change in either file's size keeps the test on its case).
@pytest.mark.parametrize("committed", [False, True], ids=["at-commit", "after-commit"])
def test_a_full_disk_during_an_ingest_is_one_line_exit_4_and_the_data_stays_whole(prepared, small_fs, committed):
    if committed:
        store_kib, links_kib = _growth(small_fs, prepared)
        assert store_kib > 500 and links_kib > 100, (store_kib, links_kib)
        leave_kib = store_kib + links_kib // 2
    else:
        leave_kib = 100
    data = small_fs / "data"
    shutil.copytree(prepared["data"], data)
    before = _stored(data)
    filler = _fill(small_fs, leave_kib)
    says = "records are committed" if committed else "nothing of this commit was written"
    _one_line_exit_4(_ingest_docs(data, prepared["docs"]), says, "database or disk is full")
    assert _stored(data) == before + DOCS * committed
    assert _answered(data) == before + DOCS * committed  # the disk still full: reading needs no room
    filler.unlink()
    again = _ingest_docs(data, prepared["docs"])  # room again: the next ingest lands and catches up
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert _stored(data) == before + DOCS


def _file_size_limit(limit: int):
    def apply() -> None:  # in the child: writes past `limit` bytes fail (EFBIG) instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_is_a_full_disk_too(prepared, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(prepared["data"], data)
    before = _stored(data)
    # No file may be written past 32 KiB, while the commit's pages alone are more than that: it fails
    # whether SQLite appends to its write-ahead log or starts it again from the beginning (a limit
    # above the largest file failed only when the log was appended to, which a checkpoint decides).
    limit = 32 * 1024
    assert sum(path.stat().st_size for path in prepared["docs"].rglob("*.md")) > 2 * limit
    out = _ingest_docs(data, prepared["docs"], preexec_fn=_file_size_limit(limit))
    _one_line_exit_4(out, "nothing of this commit was written")  # SQLite says "disk I/O error" to EFBIG
    assert _stored(data) == _answered(data) == before
    again = _ingest_docs(data, prepared["docs"])
    assert again.returncode == 0, again.stderr
    assert _stored(data) == before + DOCS

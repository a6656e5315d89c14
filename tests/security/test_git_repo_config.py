"""`ingest git` reads history only: a repository's own `.git/config` is part of the input, and runs
nothing and opens nothing outside the repository. Found by the red team: a partial clone
(`extensions.partialClone`) with one blob removed made `git log --numstat` fetch it from the
promisor remote, which ran the repository's `core.sshCommand` (any command, as the ingesting user),
even with `protocol.ssh.allow=always` against a `-c protocol.allow=never`; and `mailmap.file`
pointing at any file on the host put that file's names into the stored commits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", ".")
    _git(repo, "config", "user.email", "ana@example.com")
    _git(repo, "config", "user.name", "Ana")
    (repo / "a.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    (repo / "a.txt").write_text("one\ntwo\n")
    _git(repo, "commit", "-qam", "second")
    return repo


def _ingest(repo: Path, data: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "ingest",
            "git",
            str(repo),
            "--data-dir",
            str(data),
            "--no-index",
            "--public",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_partial_clone_cannot_make_ingest_run_a_command(tmp_path):
    repo, marker = _repo(tmp_path), tmp_path / "pwned"
    blob = _git(repo, "rev-parse", "HEAD~1:a.txt")
    (repo / ".git/objects" / blob[:2] / blob[2:]).unlink()  # the promisor remote "has" it
    command = f"sh -c 'touch {marker}; exit 1' --"
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", "ssh://git.example.invalid/x"),
        ("remote.origin.promisor", "true"),
        ("core.sshCommand", command),
        ("protocol.ssh.allow", "always"),
        ("protocol.allow", "always"),
        ("core.fsmonitor", command),
        ("diff.external", command),
        ("diff.evil.textconv", command),
    ):
        _git(repo, "config", key, value)
    out = _ingest(repo, tmp_path / "data")
    assert not marker.exists(), "ingest git ran a command named by the repository's config"
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert "Traceback" not in out.stderr and (out.returncode == 0 or len(lines) == 1), out.stderr


def test_the_repository_config_cannot_make_git_open_a_file_outside(tmp_path):
    repo = _repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "names").write_text("Host Secret <ana@example.com>\n")
    fifo = outside / "fifo"
    os.mkfifo(fifo)  # git opening it would block: the ingest would time out
    _git(repo, "config", "mailmap.file", str(outside / "names"))
    _git(repo, "config", "diff.orderFile", str(fifo))
    data = tmp_path / "data"
    try:
        out = _ingest(repo, data)
    except subprocess.TimeoutExpired:
        pytest.fail("git opened a FIFO named by the repository's diff.orderFile")
    assert out.returncode == 0, out.stderr
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "query",
            "commits",
            '[{"$project": {"_id": 0, "author": 1}}]',
            "--data-dir",
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Ana" in shown.stdout and "Host Secret" not in shown.stdout, shown.stdout

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
    code = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
        "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); sys.exit(p.returncode)"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            sys.executable,
            "-m",
            "context_engine.cli",
            "ingest",
            *args,
            "--data-dir",
            str(tmp_path / "data"),
            "--no-index",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
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


# --------------------------------------------------------------------------------------------
# Tiny JSON values: what the text builds in memory is bounded, whatever the compression
# --------------------------------------------------------------------------------------------
def _one_line_refusal(out: subprocess.CompletedProcess, words: str) -> None:
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_a_29_kb_gzip_of_empty_objects_is_refused_in_seconds(tmp_path):
    dump = tmp_path / "dump.json.gz"
    with gzip.open(dump, "wb", compresslevel=9) as fh:
        fh.write(b"[" + b"{}," * 10_000_000 + b"{}]")  # 30 MB of `{},`: 10M dicts, ~900 MB parsed
    assert dump.stat().st_size < 40_000
    out, rss = _ingest(tmp_path, "github", str(dump))
    _one_line_refusal(out, "gzip bomb")
    assert rss < 200, f"peak RSS {rss} MB"


def test_uncompressed_empty_objects_are_refused_before_parsing(tmp_path):
    dump = tmp_path / "dump.json"
    dump.write_bytes(b"[" + b"{}," * 3_000_000 + b"{}]")  # 9 MB: under every size cap
    out, rss = _ingest(tmp_path, "jira", str(dump))
    _one_line_refusal(out, "a JSON bomb")
    assert rss < 200, f"peak RSS {rss} MB"


def test_the_json_value_cap_applies_to_plain_dense_files_too(tmp_path):
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(json.dumps({"key": f"ENG-{i}", "fields": {"summary": "x" * 40}}) for i in range(300)))
    out, _ = _ingest(tmp_path, "jira", str(dump), env={"CONTEXT_ENGINE_MAX_JSON_VALUES": "500"})
    _one_line_refusal(out, "over the 500 cap (CONTEXT_ENGINE_MAX_JSON_VALUES)")


def test_deep_nesting_is_one_skipped_file_not_a_traceback(tmp_path):
    dump = tmp_path / "deep.json"
    dump.write_text("[" * 100_000 + "]" * 100_000)
    out, _ = _ingest(tmp_path, "github", str(dump))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "nested too deeply" in out.stderr and "1 skipped" in out.stdout


def test_a_huge_json_line_is_skipped_at_the_record_cap(tmp_path):
    dump = tmp_path / "issues.jsonl"
    ok = json.dumps({"key": "ENG-1", "fields": {"summary": "fine"}})
    huge = json.dumps({"key": "ENG-2", "fields": {"summary": "x" * (2 << 20)}})
    dump.write_text(f"{ok}\n{huge}\n")
    out, _ = _ingest(tmp_path, "jira", str(dump), env={"CONTEXT_ENGINE_MAX_RECORD_MB": "1"})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "issues.jsonl:2: a record over the 1 MB cap" in out.stderr and "1 skipped" in out.stdout


def test_a_zip_of_many_small_bomb_members_is_refused_as_a_whole(tmp_path):
    """Each member is under the ratio floor (1 MB) that `read_member` weighs; together they are a bomb."""
    export = _export_zip(tmp_path / "many.zip")
    with zipfile.ZipFile(export, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        for day in range(1, 29):
            zf.writestr(f"general/2024-02-{day:02d}.json", b"[" + b"{}," * 300_000 + b"{}]")
    out, _ = _ingest(tmp_path, "slack", str(export))
    _one_line_refusal(out, "a zip bomb")


def test_a_dense_slack_day_file_is_skipped_and_counted(tmp_path):
    root = tmp_path / "acme-slack-export"
    for name, value in EXPORT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(value))
    (root / "general" / "2024-01-02.json").write_bytes(b"[" + b"{}," * 300_000 + b"{}]")
    out, _ = _ingest(tmp_path, "slack", str(root))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "2024-01-02.json" in out.stderr and "a JSON bomb" in out.stderr and "1 skipped" in out.stdout


def test_many_files_each_under_its_caps_stop_at_the_whole_input_cap(tmp_path):
    docs = tmp_path / "wiki"
    docs.mkdir()
    for i in range(4):
        (docs / f"page{i}.md").write_text(f"# Page {i}\n" + "words " * 70_000)  # ~420 KB each
    out, _ = _ingest(tmp_path, "docs", str(docs), env={"CONTEXT_ENGINE_MAX_INPUT_MB": "1"})
    _one_line_refusal(out, "more than 1 MB in total (CONTEXT_ENGINE_MAX_INPUT_MB)")


def test_json_values_are_counted_across_the_files_of_one_ingest(tmp_path):
    files = []
    for i in range(3):
        files.append(tmp_path / f"dump{i}.jsonl")
        files[-1].write_text(
            "\n".join(json.dumps({"key": f"ENG-{i}{n}", "fields": {"summary": "x" * 40}}) for n in range(100))
        )
    env = {"CONTEXT_ENGINE_MAX_INPUT_VALUES": "500"}  # each file holds 200, under its own cap
    out, _ = _ingest(tmp_path, "jira", *map(str, files[:2]), env=env)
    assert out.returncode == 0, out.stderr
    out, _ = _ingest(tmp_path, "jira", *map(str, files), env=env)
    _one_line_refusal(out, "more than 500 JSON objects and arrays in total (CONTEXT_ENGINE_MAX_INPUT_VALUES)")

"""A time that is no date in UTC is a value, never a crash. Found by the red team: the string
"0001-01-01T00:00:00+01:00" (before year 1 once moved to UTC) anywhere in an ingested record (a Jira
field, a Slack message's `edited.at`), in a docs page's front matter `date`, or as a `{"$date": ...}`
of a hand-written (or model-written) pipeline raised OverflowError: a traceback for the whole ingest
or query. Now such a string stays a string (ingest keeps the record; a pipeline that uses it as a
date is refused in one line), and a front matter date of that kind is no date."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OUT_OF_RANGE = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", *args], capture_output=True, text=True, timeout=120
    )


def _ok(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-1500:]


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_a_field_out_of_the_calendar_keeps_its_record(tmp_path, when):
    issue = {
        "key": "ENG-1",
        "fields": {"summary": "odd", "due": when, "project": {"key": "ENG"}, "created": "2026-01-01T00:00:00.000+0000"},
    }
    (tmp_path / "jira.json").write_text(json.dumps({"issues": [issue, {**issue, "key": "ENG-2"}]}))
    out = _cli("ingest", "jira", str(tmp_path / "jira.json"), "--data-dir", str(tmp_path / "data"), "--no-index")
    _ok(out)
    assert "issues 2+0~0" in out.stdout, out.stdout


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_a_slack_message_and_a_docs_page_with_such_a_date_are_read(tmp_path, when):
    export = tmp_path / "slack"
    (export / "general").mkdir(parents=True)
    (export / "channels.json").write_text('[{"id": "C1", "name": "general", "members": ["U1"]}]')
    (export / "users.json").write_text('[{"id": "U1", "name": "ana"}]')
    (export / "general" / "2023-11-14.json").write_text(
        json.dumps(
            [{"type": "message", "user": "U1", "text": "edited", "ts": "1700000000.000100", "edited": {"at": when}}]
        )
    )
    out = _cli("ingest", "slack", str(export), "--data-dir", str(tmp_path / "data"), "--no-index")
    _ok(out)
    assert "messages 1+0~0" in out.stdout, out.stdout
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "old.md").write_text(f"---\ntitle: Old\ndate: {when.replace('T', ' ')}\n---\n# Old\nbody\n")
    out = _cli("ingest", "docs", str(docs), "--data-dir", str(tmp_path / "data"), "--no-index")
    _ok(out)
    assert "documents 1+0~0" in out.stdout, out.stdout


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_a_pipeline_date_out_of_the_calendar_is_one_line(tmp_path, when):
    data = tmp_path / "data"
    _ok(_cli("ingest", "sample", "--data-dir", str(data), "--no-index"))
    out = _cli(
        "query",
        "pull_requests",
        json.dumps([{"$match": {"created_at": {"$gte": {"$date": when}}}}]),
        "--data-dir",
        str(data),
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode in (2, 3) and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-1500:]

"""Classes 8 and 9: one writer at a time (no lost update, no traceback), crash-consistent derived
state (a kill at any step of an ingest leaves data and catalog agreeing), no pickle in a data dir,
and a second process sees a writer's commit without a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.query.catalog import load_catalog
from context_engine.resources import forget, store_for
from context_engine.store.documents import open_store

WRITE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from context_engine.config import Settings
    from context_engine.ingest import ingest
    data_dir, number, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if hold:  # keep the lock a while after writing, so the other writer must wait
        import context_engine.ingest as module
        original = module.refresh_catalog
        def slow(*args, **kwargs):
            time.sleep(hold)
            return original(*args, **kwargs)
        module.refresh_catalog = slow
    pr = {"number": number, "title": f"PR {number}", "html_url": f"https://github.com/o/r/pull/{number}", "acl": ["*"]}
    ingest(Settings(data_dir=Path(data_dir), mongodb_uri=None), {"t1": {"pull_requests": [pr]}}, index=False,
           on_wait=lambda message: print(message, file=sys.stderr, flush=True))
""")


def _writer(data_dir: Path, number: int, hold: float = 0.0, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITE, str(data_dir), str(number), str(hold)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _refs(data_dir: Path) -> list[str]:
    coll = open_store(Settings(data_dir=data_dir, mongodb_uri=None)).collection("pull_requests")
    return sorted(d["ref"] for d in coll.find({}))


def test_two_concurrent_ingests_both_land_and_the_second_waits(tmp_path):
    first = _writer(tmp_path, 1, hold=2.0)
    time.sleep(0.8)
    second = _writer(tmp_path, 2)
    out1, out2 = first.communicate(timeout=120), second.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, (out1, out2)
    assert "waiting for another writer" in out2[1] and "Traceback" not in out2[1]
    assert _refs(tmp_path) == ["o/r#1", "o/r#2"]


def test_a_writer_that_cannot_get_the_lock_fails_in_one_line(tmp_path):
    first = _writer(tmp_path, 1, hold=4.0)
    time.sleep(0.8)
    cli = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "ingest", "sample", "--data-dir", str(tmp_path), "--no-index"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CONTEXT_ENGINE_LOCK_WAIT": "0.5"},
    )
    first.communicate(timeout=120)
    lines = [line for line in cli.stderr.splitlines() if line.strip() and not line.startswith("waiting")]
    assert cli.returncode == 2 and len(lines) == 1 and "another writer" in lines[0], cli.stderr
    assert _refs(tmp_path) == ["o/r#1"]


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [0.05, 0.3, 0.6, 1.0, 1.5, 2.5])
def test_a_killed_ingest_leaves_data_and_catalog_agreeing(tmp_path, kill_after):
    data = tmp_path / "data"
    base = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "ingest", "sample", "--data-dir", str(data), "--no-index"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert base.returncode == 0, base.stderr
    extra = tmp_path / "extra.json"
    extra.write_text(
        json.dumps(
            [
                {
                    "number": 90000 + i,
                    "title": f"killed {i}",
                    "state": "open",
                    "labels": [{"name": "zzkill"}],
                    "html_url": f"https://github.com/acme/web/pull/{90000 + i}",
                    "repository": {"full_name": "acme/web", "private": False},
                }
                for i in range(300)
            ]
        )
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "ingest",
            "github",
            str(extra),
            "--data-dir",
            str(data),
            "--tenant",
            "acme",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(kill_after)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    settings = Settings(data_dir=data, mongodb_uri=None, tenant="acme")
    store = open_store(settings)
    stored = store.collection("pull_requests").count_documents({"tenant_id": "acme", "title": {"$regex": "^killed"}})
    assert stored in (0, 300)  # the commit is one transaction: all or nothing
    catalog = load_catalog(store, settings, "acme")
    assert catalog.generation == store.generation
    labels = catalog.schemas["pull_requests"].fields["labels.name"].enum or []
    assert ("zzkill" in labels) == (stored == 300)  # the schema describes the data that is there
    assert list(data.rglob("*.pkl")) == [] and list(data.rglob("*.pickle")) == []


def test_another_process_sees_a_commit_without_restarting(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None, tenant="t1")
    ingest(
        settings,
        {
            "t1": {
                "pull_requests": [
                    {"number": 1, "title": "one", "acl": ["*"], "html_url": "https://github.com/o/r/pull/1"}
                ]
            }
        },
        index=False,
    )
    forget(settings)
    held = store_for(settings)
    assert held.count("pull_requests", "t1") == 1
    writer = _writer(tmp_path, 2)
    assert writer.wait(timeout=120) == 0, writer.stderr.read()
    assert store_for(settings).count("pull_requests", "t1") == 2  # reloaded: the generation moved
    assert store_for(settings) is store_for(settings)  # and held again until the next commit


def test_data_dirs_hold_no_pickle_and_legacy_pickles_are_never_loaded(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(
        settings,
        {
            "t1": {
                "pull_requests": [
                    {"number": 1, "title": "one", "acl": ["*"], "html_url": "https://github.com/o/r/pull/1"}
                ]
            }
        },
        index=False,
    )
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes()[:2] in (b"\x80\x04", b"\x80\x05")]
    legacy = tmp_path / "legacy"
    (legacy / "store" / "gen-000001").mkdir(parents=True)
    (legacy / "store" / "CURRENT").write_text("gen-000001")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "context_engine.cli",
            "query",
            "pull_requests",
            '[{"$count": "n"}]',
            "--data-dir",
            str(legacy),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "pickle" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_crash_right_after_the_store_commit_is_repaired_on_next_use(tmp_path, monkeypatch):
    import context_engine.ingest as ingest_module

    settings = Settings(data_dir=tmp_path, mongodb_uri=None, tenant="t1")
    pr = {
        "number": 1,
        "title": "one",
        "acl": ["*"],
        "html_url": "https://github.com/o/r/pull/1",
        "labels": [{"name": "old"}],
    }
    ingest(settings, {"t1": {"pull_requests": [pr]}}, index=False)

    def crash(*_args, **_kwargs):
        raise KeyboardInterrupt  # the process dies between the store's commit and the catalog's refresh

    monkeypatch.setattr(ingest_module, "refresh_catalog", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest(settings, {"t1": {"pull_requests": [{**pr, "labels": [{"name": "new"}]}]}}, index=False)
    monkeypatch.undo()
    store = open_store(settings)
    assert load_catalog(store, settings, "t1").schemas["pull_requests"].fields["labels.name"].examples == ["new"]
    # and a re-ingest that changes nothing repairs it too
    ingest(settings, {"t1": {"pull_requests": [{**pr, "labels": [{"name": "new"}]}]}}, index=False)

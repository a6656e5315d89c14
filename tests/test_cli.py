import json
import sys

import pytest

from tests.conftest import run_cli

NOW = "2026-11-30T12:00:00Z"


def test_ask_json_contract(sample_dir):
    out = run_cli("ask", "PRs Rashid merged last week", "--json", "--now", NOW, "--data-dir", str(sample_dir))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"question", "route", "answer", "queries", "records", "citations"}
    (query,) = data["queries"]
    assert query["collection"] == "pull_requests" and query["row_count"] == len(data["records"]) > 0
    assert query["attempts"][0]["error"] is None and query["attempts"][0]["pipeline"] == query["pipeline"]
    assert all({"id", "collection", "title", "url"} <= set(c) for c in data["citations"])
    assert all(r["html_url"].startswith("https://github.com/") for r in data["records"])
    assert not any(k in r for r in data["records"] for k in ("tenant_id", "acl", "_id"))


def test_ask_aggregate_over_people_has_display_names(sample_dir):
    out = run_cli(
        "ask", "who reviewed the most PRs in the payments repo", "--json", "--now", NOW, "--data-dir", str(sample_dir)
    )
    rows = json.loads(out.stdout)["records"]
    assert rows and all(r.get("name") and r["_id"] for r in rows)


def test_ask_as_the_asker(sample_dir):
    out = run_cli(
        "ask", "open issues assigned to me", "--json", "--as", "rsh-dev", "--now", NOW, "--data-dir", str(sample_dir)
    )
    data = json.loads(out.stdout)
    assert data["records"] and all(r["fields"]["assignee"]["name"] == "rkhan" for r in data["records"])


@pytest.mark.parametrize(
    "args,message",
    [
        (["ask", "   "], "question is empty"),
        (["ask", "my PRs", "--as", "nobody-at-all"], "unknown asker"),
        (["ask", "my PRs", "--now", "yesterday-ish"], "malformed time"),
        (["ingest", "github", "/no/such/file.jsonl"], "no such file"),
        (["query", "pull_requests", "[{not json"], "not valid JSON"),
        (["query", "secrets", "[]"], "unknown collection"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(sample_dir, args, message):
    out = run_cli(*args, "--data-dir", str(sample_dir))
    assert out.returncode == 2, out
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_missing_data_is_exit_2(tmp_path):
    out = run_cli("ask", "open PRs", "--data-dir", str(tmp_path / "empty"))
    assert out.returncode == 2 and "ingest sample" in out.stderr and "Traceback" not in out.stderr


def test_query_runs_hand_written_pipelines_through_validation(sample_dir):
    ok = run_cli(
        "query", "pull_requests", '[{"$match": {"state": "open"}}, {"$count": "count"}]', "--data-dir", str(sample_dir)
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["records"][0]["count"] > 0
    rejected = run_cli("query", "pull_requests", '[{"$match": {"tenant_id": "globex"}}]', "--data-dir", str(sample_dir))
    assert rejected.returncode == 3 and "tenant_id" in rejected.stderr
    as_json = run_cli(
        "query", "pull_requests", '[{"$match": {"tenant_id": "globex"}}]', "--json", "--data-dir", str(sample_dir)
    )
    assert as_json.returncode == 3 and any("tenant_id" in e for e in json.loads(as_json.stdout)["errors"])
    dated = run_cli(
        "query",
        "pull_requests",
        '[{"$match": {"merged_at": {"$gte": {"$date": "2026-11-23T00:00:00Z"}}}}, {"$count": "n"}]',
        "--data-dir",
        str(sample_dir),
    )
    assert dated.returncode == 0 and json.loads(dated.stdout)["records"][0]["n"] > 0


def test_schema_command(sample_dir):
    out = run_cli("schema", "--json", "--data-dir", str(sample_dir))
    schemas = json.loads(out.stdout)
    assert "pull_requests" in schemas and "tenant_id" not in out.stdout and '"acl"' not in out.stdout


def test_a_tenant_without_data_is_an_input_error(sample_dir):
    out = run_cli("ask", "open PRs", "--tenant", "nobody", "--data-dir", str(sample_dir))
    assert out.returncode == 2 and "has no data" in out.stderr and "acme" in out.stderr


def test_output_piped_into_a_reader_that_stops_is_not_a_traceback(sample_dir):
    import subprocess
    import sys

    cli = f"{sys.executable} -m context_engine.cli schema --data-dir {sample_dir} | head -1"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cli], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr and out.stdout.startswith("collection")


@pytest.mark.parametrize(
    "command", ["ingest", "ask", "query", "eval", "people", "schema", "context-set", "feedback", "serve"]
)
def test_every_command_documents_itself(command):
    out = run_cli(command, "--help")
    assert out.returncode == 0
    assert "examples:" in out.stdout and "exit codes: 0 ok; 2 usage or input error" in out.stdout
    if command != "serve":  # a server prints no result to format
        assert "--json" in out.stdout


@pytest.mark.parametrize("args", [["ask"], ["ingest", "nope"], [], ["eval", "rag", "--half", "middle"]])
def test_usage_errors_are_one_line_and_exit_2(args):
    out = run_cli(*args)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "--help" in out.stderr


def test_status_reports_records_index_and_writer(sample_dir):
    out = run_cli("status", "--data-dir", str(sample_dir), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["writer"] is None and report["store_generation"] >= 1
    acme = report["tenants"]["acme"]
    assert acme["records"]["pull_requests"] > 0
    assert acme["index"]["chunks"] > 0 and acme["index"]["pending"] == 0
    text = run_cli("status", "--data-dir", str(sample_dir), "--tenant", "globex")
    assert text.returncode == 0 and "globex" in text.stdout and "acme" not in text.stdout.split("\n", 1)[1]


def test_python_dash_m_and_version():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "context_engine", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.startswith("context-engine ")


def test_a_module_imported_frozen_is_frozen_once_and_the_collector_left_as_it_was(tmp_path, monkeypatch):
    import gc

    from context_engine.cli import _import_frozen

    (tmp_path / "frozen_probe.py").write_text("class Thing:\n    pass\n\nthings = [Thing() for _ in range(5000)]\n")
    (tmp_path / "frozen_probe_two.py").write_text("made = [[n] for n in range(10)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        gc.unfreeze()
        module = _import_frozen("frozen_probe")
        assert gc.isenabled()
        assert gc.get_freeze_count() >= 5000  # the import's objects left out of every later collection
        gc.unfreeze()
        assert _import_frozen("frozen_probe") is module and gc.get_freeze_count() == 0  # imported: nothing frozen
        gc.disable()
        assert _import_frozen("frozen_probe_two").made[3] == [3]
        assert not gc.isenabled()  # a caller's paused collector stays paused
    finally:
        gc.unfreeze()
        gc.enable()
        for name in ("frozen_probe", "frozen_probe_two"):
            sys.modules.pop(name, None)


def _own_copy(sample_dir, tmp_path):
    import shutil

    data_dir = tmp_path / "data"
    shutil.copytree(sample_dir, data_dir)
    for old in data_dir.glob("feedback.sqlite*"):  # asks other tests made of the shared sample
        old.unlink()
    return str(data_dir)


def test_feedback_after_ask_becomes_a_template_and_replays(sample_dir, tmp_path):
    data = _own_copy(sample_dir, tmp_path)
    nothing = run_cli("feedback", "--up", "--data-dir", data)
    assert nothing.returncode == 2 and "no question asked yet" in nothing.stderr
    assert (
        run_cli("ask", "PRs Rashid merged last week", "--now", "2026-11-30T12:00:00Z", "--data-dir", data).returncode
        == 0
    )
    bad = run_cli(
        "feedback",
        "--down",
        "--data-dir",
        data,
        "--plan",
        '{"collection": "pull_requests", "pipeline": [{"$match": {"$where": "1"}}]}',
    )
    assert bad.returncode == 2 and "$where" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    up = run_cli("feedback", "--up", "--note", "right", "--data-dir", data)
    assert up.returncode == 0 and "template 'feedback-" in up.stdout, up.stderr
    listed = run_cli("context-set", "list", "--json", "--data-dir", data)
    names = {t["name"] for t in json.loads(listed.stdout)["templates"]}
    assert any(n.startswith("feedback-") for n in names) and "prs-merged-by-person" in names
    replay = run_cli("eval", "structured", "--from-feedback", "--json", "--data-dir", data)
    assert replay.returncode == 0 and json.loads(replay.stdout)["correct"] == 1


def test_context_set_add_remove_test_export(sample_dir, tmp_path):
    data = _own_copy(sample_dir, tmp_path)
    template = {
        "name": "drafts-by",
        "question": "draft PRs by {who}",
        "params": {"who": "person"},
        "plan": {
            "collection": "pull_requests",
            "pipeline": [{"$match": {"draft": True, "user.login": "{{who.github}}"}}],
        },
        "example": {"question": "draft PRs by Rashid", "values": {"who": "rsh-dev"}},
    }
    (tmp_path / "t.json").write_text(json.dumps(template))
    assert run_cli("context-set", "add", str(tmp_path / "t.json"), "--data-dir", data).returncode == 0
    again = run_cli("context-set", "add", str(tmp_path / "t.json"), "--data-dir", data)
    assert again.returncode == 2 and "already exists" in again.stderr
    tested = run_cli("context-set", "test", "drafts-by", "--json", "--data-dir", data)
    report = json.loads(tested.stdout)
    assert report["template_plan"]["pipeline"][0]["$match"]["user.login"] == "rsh-dev" and report["engine_plan"]
    text = run_cli("context-set", "test", "drafts-by", "--data-dir", data).stdout
    assert f"planner {report['engine_plan']['planner']})" in text and "same result: " in text
    unknown = run_cli("context-set", "test", "no-such", "--data-dir", data)
    assert (
        unknown.returncode == 2
        and "no template 'no-such' here (see `context-engine context-set list`)" in unknown.stderr
    )
    exported = json.loads(run_cli("context-set", "export", "--data-dir", data).stdout)
    assert exported["templates"][-1]["name"] == "drafts-by"
    assert run_cli("context-set", "remove", "drafts-by", "--data-dir", data).returncode == 0
    # A hand-edited file with a forbidden stage: one line naming the template, never a traceback.
    exported["templates"][0]["plan"]["pipeline"].append({"$out": "stolen"})
    (tmp_path / "data" / "context_sets" / "acme.json").write_text(json.dumps(exported))
    broken = run_cli("context-set", "list", "--data-dir", data)
    assert broken.returncode == 2 and len(broken.stderr.strip().splitlines()) == 1
    assert f"template '{exported['templates'][0]['name']}'" in broken.stderr and "$out" in broken.stderr


def test_eval_compare_prints_one_table(sample_dir, tmp_path):
    out = run_cli(
        "eval",
        "compare",
        "--questions",
        "tests/data/structured_heldout.jsonl",
        "--a",
        "offline",
        "--b",
        "no-context-set,reranker=none",
        "--limit",
        "3",
        "--data-dir",
        str(sample_dir),
    )
    assert out.returncode == 0, out.stderr
    assert "a = offline; b = no-context-set,reranker=none" in out.stdout and "median" in out.stdout
    assert "total" in out.stdout and out.stdout.count(" ok ") + out.stdout.count("FAIL") >= 3
    bad = run_cli(
        "eval",
        "compare",
        "--questions",
        "tests/data/structured_heldout.jsonl",
        "--a",
        "offline",
        "--b",
        "offline,data_dir=/etc",
        "--data-dir",
        str(sample_dir),
    )
    assert bad.returncode == 2 and "key one of" in bad.stderr

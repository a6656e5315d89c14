"""The connectors wired into `context-engine ingest`: real files in, exact counts out, re-ingest is
idempotent, --prune removes what a source dropped, people merge across sources, bad input is one
line and exit 2."""

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from context_engine.answering.links import references
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.resources import store_for
from tests.conftest import EVAL_DATA, REPO_ROOT, TEST_DATA_DIR, needs_slack_exports, run_cli
from tests.sources.conftest import Repo

SLACK = EVAL_DATA / "slack"
CONNECTORS = TEST_DATA_DIR / "connectors"
ROOT = REPO_ROOT


def _raw_slack_counts() -> tuple[int, int, int]:
    """(messages, conversations, users) straight from the export files."""
    messages = conversations = users = 0
    for path in sorted(SLACK.glob("*-slack-export.zip")):
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if name.endswith("users.json"):
                    users += len(json.loads(z.read(name)))
                elif name.count("/") == 1 and name.endswith(".json") and name.split("/")[1][:4].isdigit():
                    for m in json.loads(z.read(name)):
                        messages += 1
                        # a conversation: a thread parent, or a message that is nobody's reply
                        conversations += m.get("thread_ts", m["ts"]) == m["ts"]
    return messages, conversations, users


def _ask_json(data_dir: Path, *args: str) -> dict:
    out = run_cli(*args, "--json", "--data-dir", str(data_dir), "--tenant", "oss")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def slack_dir(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("slack-data")
    out = run_cli(
        "ingest",
        "slack",
        *map(str, sorted(SLACK.glob("*.zip"))),
        "--no-index",
        "--json",
        "--data-dir",
        str(data_dir),
        "--tenant",
        "oss",
    )
    assert out.returncode == 0, out.stderr
    return data_dir


@needs_slack_exports
def test_the_three_real_slack_exports_ingest_with_exact_counts(slack_dir):
    messages, conversations, users = _raw_slack_counts()
    assert (messages, conversations, users) == (52_739, 5_899, 1_563)  # the data README's figures
    store = store_for(Settings().with_overrides(data_dir=str(slack_dir), tenant="oss"))
    coll = store.collection("messages")
    assert store.count("messages", "oss") == messages
    stored_conversations = coll.count_documents(
        {"tenant_id": "oss", "$expr": {"$eq": [{"$ifNull": ["$thread_ts", "$ts"]}, "$ts"]}}
    )
    assert stored_conversations == conversations
    assert store.count("people", "oss") == users


@needs_slack_exports
def test_a_slack_message_links_to_a_github_pr(slack_dir):
    store = store_for(Settings().with_overrides(data_dir=str(slack_dir), tenant="oss"))
    linking = store.collection("messages").find(
        {"tenant_id": "oss", "text": {"$regex": "github.com/racket/scribble/pull/111"}}
    )
    targets = {ref.target for message in linking for ref in references(message)}
    assert "racket/scribble#111" in targets


@needs_slack_exports
def test_reingesting_an_unchanged_source_changes_nothing(slack_dir):
    out = run_cli(
        "ingest",
        "slack",
        str(SLACK / "elmlang-slack-export.zip"),
        "--no-index",
        "--json",
        "--data-dir",
        str(slack_dir),
        "--tenant",
        "oss",
    )
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)
    assert report["collections"]["messages"] == {"inserted": 0, "updated": 0, "unchanged": 14_510}
    assert report["skipped"] == 0 and not report["removed"]


@needs_slack_exports
def test_structured_questions_over_the_slack_export(slack_dir):
    data = _ask_json(
        slack_dir, "ask", "how many messages were posted in #clojure in March 2019?", "--now", "2019-06-30T00:00:00"
    )
    store = store_for(Settings().with_overrides(data_dir=str(slack_dir), tenant="oss"))
    from datetime import datetime

    expected = store.collection("messages").count_documents(
        {"tenant_id": "oss", "channel": "clojure", "date": {"$gte": datetime(2019, 3, 1), "$lt": datetime(2019, 4, 1)}}
    )
    assert expected > 0 and data["records"] == [{"count": expected}]


def test_this_projects_own_git_history_ingests(tmp_path):
    commits = int(
        subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    )
    out = run_cli("ingest", "git", str(ROOT), "--no-index", "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)
    assert report["collections"]["commits"]["inserted"] == commits and report["skipped"] == 0


def test_prs_recovered_from_git_never_replace_github_data(tmp_path):
    repo = Repo(tmp_path / "widgets", tmp_path)
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    repo.write("a.txt", "a\n")
    repo.git("commit", "-q", "-m", "Add cache (#13)")
    repo.write("b.txt", "b\n")
    repo.git("commit", "-q", "-m", "Add b (#14)")
    settings = Settings().with_overrides(data_dir=str(tmp_path / "data"), tenant="acme")
    from_github = {
        "number": 13,
        "title": "Add a cache layer",
        "state": "closed",
        "merged_at": "2026-01-01T00:00:00Z",
        "html_url": "https://github.com/acme/widgets/pull/13",
        "user": {"login": "carol"},
        "acl": ["*"],
    }
    ingest(settings, {"acme": {"pull_requests": [from_github]}}, index=False)
    from context_engine.sources.git import read_git_repo
    from context_engine.sources.problems import ReadProblems

    ingest(settings, {"acme": read_git_repo(repo.root, ReadProblems())}, index=False)
    prs = {d["ref"]: d for d in store_for(settings).collection("pull_requests").find({"tenant_id": "acme"})}
    assert prs["acme/widgets#13"]["title"] == "Add a cache layer" and "recovered_from" not in prs["acme/widgets#13"]
    assert prs["acme/widgets#14"]["recovered_from"] == "git"


def test_prune_removes_only_what_the_source_no_longer_has(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in ("adr/ADR-007-webhook-idempotency.md", "handbook/onboarding.md", "notes/planning-scratch.markdown"):
        shutil.copy(CONNECTORS / "docs" / page, docs / Path(page).name)
    data = tmp_path / "data"
    first = json.loads(run_cli("ingest", "docs", str(docs), "--no-index", "--json", "--data-dir", str(data)).stdout)[0]
    kept = first["collections"]["documents"]["inserted"]
    assert kept == 3
    (docs / "onboarding.md").unlink()
    again = json.loads(run_cli("ingest", "docs", str(docs), "--no-index", "--json", "--data-dir", str(data)).stdout)[0]
    assert not again["removed"]  # without --prune nothing is removed
    pruned = json.loads(
        run_cli("ingest", "docs", str(docs), "--prune", "--no-index", "--json", "--data-dir", str(data)).stdout
    )[0]
    assert pruned["removed"] == {"documents": 1}
    assert store_for(Settings().with_overrides(data_dir=str(data))).count("documents", "acme") == kept - 1


def test_people_from_different_sources_merge_into_one_person(tmp_path):
    settings = Settings().with_overrides(data_dir=str(tmp_path), tenant="acme")
    ingest(
        settings,
        {"acme": {"people": [{"login": "achen42", "name": "Alex Chen", "source": "github:acme/api"}]}},
        index=False,
    )
    ingest(
        settings,
        {
            "acme": {
                "people": [
                    {
                        "slack_id": "U0ALEX",
                        "slack_handle": "alex",
                        "name": "Alex Chen",
                        "email": "alex@acme.io",
                        "source": "slack:acme",
                    }
                ]
            }
        },
        index=False,
    )
    ingest(
        settings,
        {"acme": {"people": [{"name": "Alex Chen", "email": "alex@acme.io", "source": "git:local/api"}]}},
        index=False,
    )
    out = run_cli("people", "--json", "--data-dir", str(tmp_path), "--tenant", "acme")
    assert out.returncode == 0, out.stderr
    (person,) = json.loads(out.stdout)["people"]
    assert (person["login"], person["slack_id"], person["email"]) == ("achen42", "U0ALEX", "alex@acme.io")
    assert person["evidence"] and person["git_names"] == ["Alex Chen"]


def test_people_overrides_file_joins_what_names_cannot(tmp_path):
    settings = Settings().with_overrides(data_dir=str(tmp_path), tenant="acme")
    ingest(
        settings,
        {
            "acme": {
                "people": [
                    {"login": "rsh-dev", "name": "rsh-dev", "source": "github:acme/api"},
                    {"slack_id": "U0RK", "slack_handle": "rashid", "name": "Rashid Khan", "source": "slack:acme"},
                ]
            }
        },
        index=False,
    )
    overrides = tmp_path / "people.yaml"
    overrides.write_text("- name: Rashid Khan\n  github: rsh-dev\n  slack: U0RK\n  team: payments\n")
    out = run_cli("ingest", "people", str(overrides), "--no-index", "--data-dir", str(tmp_path), "--tenant", "acme")
    assert out.returncode == 0, out.stderr
    (person,) = store_for(settings).collection("people").find({"tenant_id": "acme"})
    assert (person["name"], person["login"], person["slack_id"], person["team"]) == (
        "Rashid Khan",
        "rsh-dev",
        "U0RK",
        "payments",
    )


def test_a_malformed_file_is_skipped_and_counted_the_rest_goes_in(tmp_path):
    out = run_cli(
        "ingest",
        "jira",
        *map(str, sorted((CONNECTORS / "jira").iterdir())),
        "--no-index",
        "--json",
        "--data-dir",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)
    assert report["skipped"] >= 1 and report["collections"]["issues"]["inserted"] > 0
    assert any("broken-page.json" in p for p in report["problems"])


@pytest.mark.parametrize(
    "args,message",
    [
        (["ingest", "slack", "/no/such/export.zip"], "no such"),
        (["ingest", "git", "/"], "not a git repository"),
        (["ingest", "git"], "needs one path"),
        (["ingest", "docs", "--repo", "a/b"], "--repo is for"),
        (["ingest", "github", "--repo", "acme/api"], "GITHUB_TOKEN"),
    ],
)
def test_bad_sources_are_one_line_and_exit_2(tmp_path, args, message):
    out = run_cli(*args, "--data-dir", str(tmp_path), env={"GITHUB_TOKEN": "", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_commit_writes_only_the_records_an_ingest_changed(tmp_path, monkeypatch):
    from context_engine.store.sqlite_file import StoreFile

    settings = Settings().with_overrides(data_dir=str(tmp_path), tenant="acme")
    pull = {"number": 1, "title": "Add cache", "html_url": "https://github.com/acme/api/pull/1", "acl": ["*"]}
    message = {
        "ts": "1700000000.000100",
        "channel_id": "C1",
        "channel": "dev",
        "user": "U1",
        "text": "hi",
        "acl": ["*"],
    }
    ingest(settings, {"acme": {"pull_requests": [pull], "messages": [message]}}, index=False)
    written = []
    original = StoreFile.write
    monkeypatch.setattr(StoreFile, "write", lambda self, changes: original(self, written.extend(changes) or written))
    ingest(
        settings,
        {"acme": {"pull_requests": [pull], "messages": [message, {**message, "ts": "1700000001.000100"}]}},
        index=False,
    )
    assert [(name, doc["ref"]) for name, _, doc in written] == [("messages", "C1:1700000001.000100")]
    written.clear()
    ingest(settings, {"acme": {"pull_requests": [pull]}}, index=False)  # nothing changed: nothing written
    assert written == []
    store = store_for(settings)
    assert store.count("pull_requests", "acme") == 1 and store.count("messages", "acme") == 2

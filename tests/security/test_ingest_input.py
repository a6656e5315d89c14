"""Ingest reads only what it was given, a source record never speaks for the engine, and no source
replaces another's record.

- input: inside an input root only regular files are read (no symlink out, no FIFO, socket or
  device, no archive member that is a symlink or leaves the archive); refusals are named in one line;
- hidden fields (`acl`, `tenant_id`, `_id`) in a source's own records are dropped: a record is
  readable by exactly who it would be without them;
- keys: a record of one source never overwrites another source's record with the same ref, and
  `--prune` of one source deletes only that source's records.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path

import httpx
import pytest

from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.sources.connectors import SourceRequest, read_source
from context_engine.sources.github_api import sync_github
from context_engine.sources.input_files import NotReadable, open_input
from context_engine.sources.problems import ReadProblems, SourceError
from context_engine.sources.slack import read_slack_export
from context_engine.store.documents import open_store
from tests.conftest import run_cli

SECRET = "hunter2-do-not-ingest"
HOSTILE = {"acl": ["*"], "tenant_id": "globex", "_id": "0" * 24}


def _settings(data_dir: Path, tenant: str = "acme") -> Settings:
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant=tenant)


def _stored(data_dir: Path, collection: str) -> list[dict]:
    return list(open_store(_settings(data_dir)).collection(collection).find({}))


def _ingest(data_dir: Path, source: str, *paths: Path, prune: bool = False) -> ReadProblems:
    problems = ReadProblems()
    read = read_source(SourceRequest(source, list(paths), full=prune), "acme", data_dir, problems)
    ingest(_settings(data_dir), read.per_tenant, index=False, prune=prune)
    return problems


def _page(path: Path, text: str, **front: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = "".join(f"{k}: {json.dumps(v)}\n" for k, v in front.items())
    path.write_text(f"---\n{meta}---\n{text}\n" if front else text + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# Input: regular files inside the root only
# --------------------------------------------------------------------------------------------
@pytest.fixture
def hostile_docs(tmp_path) -> Path:
    outside = _page(tmp_path / "outside" / "secret.md", f"# Secret\n{SECRET}")
    root = tmp_path / "wiki"
    _page(root / "deploy.md", "# Deploy\nRun the pipeline.")
    (root / "env.md").symlink_to("/proc/self/environ")
    (root / "secret.md").symlink_to(outside)
    (root / "linked").symlink_to(outside.parent, target_is_directory=True)
    os.mkfifo(root / "pipe.md")
    return root


def test_docs_folder_reads_no_symlink_fifo_or_linked_folder_through_the_cli(hostile_docs, tmp_path):
    data = tmp_path / "data"
    out = run_cli(
        "ingest", "docs", str(hostile_docs), "--data-dir", str(data), "--no-index", env={"CE_TEST_SECRET": SECRET}
    )  # would be in /proc/self/environ if it were read
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    refusals = [line for line in out.stderr.splitlines() if "not regular files inside the input" in line]
    assert len(refusals) == 1, out.stderr
    for name in ("env.md (symlink)", "secret.md (symlink)", "linked (symlink)", "pipe.md (fifo)"):
        assert name in refusals[0]
    assert "4 skipped" in out.stdout
    assert [d["path"] for d in _stored(data, "documents")] == ["deploy.md"]
    assert SECRET not in (data / "store.sqlite").read_bytes().decode("utf-8", "replace")


def test_open_input_refuses_a_path_through_a_symlinked_folder(hostile_docs):
    root = hostile_docs.resolve()
    with pytest.raises(NotReadable) as refused:
        open_input(root / "linked" / "secret.md", root)  # the last component is a regular file
    assert refused.value.kind == "outside the input"
    with open_input(root / "deploy.md", root) as fh:
        assert b"Deploy" in fh.read()


def test_a_fifo_or_folder_given_as_a_dump_file_is_one_line_and_never_hangs(tmp_path):
    os.mkfifo(tmp_path / "dump.jsonl")
    for path, kind in ((tmp_path / "dump.jsonl", "fifo"), (tmp_path, "folder")):
        out = run_cli("ingest", "github", str(path), "--data-dir", str(tmp_path / "data"), "--no-index")
        assert out.returncode != 0 and "Traceback" not in out.stderr
        assert out.stderr.strip().splitlines() == [
            (f"context-engine: error: cannot read {path}: a {kind}, not a regular file")
        ]


def test_a_symlink_named_by_the_operator_is_followed_once(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text(json.dumps({"key": "ENG-1", "fields": {"summary": "Fix login"}}) + "\n")
    (tmp_path / "given.jsonl").symlink_to(real)
    _ingest(tmp_path / "data", "jira", tmp_path / "given.jsonl")
    assert [r["ref"] for r in _stored(tmp_path / "data", "issues")] == ["ENG-1"]


def _slack_folder(root: Path) -> Path:
    (root / "general").mkdir(parents=True)
    (root / "channels.json").write_text(json.dumps([{"id": "C1", "name": "general", "members": ["U1"]}]))
    (root / "general" / "2024-01-01.json").write_text(
        json.dumps([{"type": "message", "user": "U1", "text": "hello <@U1>", "ts": "1704100000.000100"}])
    )
    return root


def test_unpacked_slack_export_refuses_a_symlinked_users_json_and_day_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "users.json").write_text(
        json.dumps([{"id": "U1", "name": "eve", "real_name": SECRET, "profile": {"email": "eve@outside.example"}}])
    )
    (outside / "day.json").write_text(
        json.dumps([{"type": "message", "user": "U1", "text": SECRET, "ts": "1704200000.000100"}])
    )
    root = _slack_folder(tmp_path / "acme-slack-export")
    (root / "users.json").symlink_to(outside / "users.json")
    (root / "general" / "2024-01-02.json").symlink_to(outside / "day.json")
    problems = ReadProblems()
    out = read_slack_export(root, problems)
    assert [m["text"] for m in out["messages"]] == ["hello @U1"]  # no name from the outside users.json
    assert out["people"] == []
    assert (
        "users.json (symlink)" in problems.examples[0] and "general/2024-01-02.json (symlink)" in problems.examples[0]
    )


def test_unpacked_slack_export_whose_channel_listing_is_a_symlink_is_refused(tmp_path):
    root = _slack_folder(tmp_path / "export")
    (tmp_path / "channels.json").write_text((root / "channels.json").read_text())
    (root / "channels.json").unlink()
    (root / "channels.json").symlink_to(tmp_path / "channels.json")
    out = run_cli("ingest", "slack", str(root), "--data-dir", str(tmp_path / "data"), "--no-index")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "not a Slack export" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def _member(zf: zipfile.ZipFile, name: str, data: str, mode: int = stat.S_IFREG | 0o644) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    zf.writestr(info, data)


def test_zip_members_that_are_symlinks_devices_or_escape_are_refused(tmp_path):
    export = tmp_path / "acme-slack-export.zip"
    with zipfile.ZipFile(export, "w") as zf:
        _member(zf, "channels.json", json.dumps([{"id": "C1", "name": "general"}]))
        _member(zf, "users.json", "/proc/self/environ", stat.S_IFLNK | 0o777)
        _member(zf, "general/2024-01-01.json", json.dumps([{"type": "message", "text": "ok", "ts": "1704100000.1"}]))
        _member(zf, "general/2024-01-02.json", "", stat.S_IFCHR | 0o600)
        _member(zf, "../general/2024-01-03.json", json.dumps([{"type": "message", "text": SECRET, "ts": "1.2"}]))
        _member(zf, "/general/2024-01-04.json", json.dumps([{"type": "message", "text": SECRET, "ts": "1.3"}]))
    data = tmp_path / "data"
    out = run_cli("ingest", "slack", str(export), "--data-dir", str(data), "--no-index")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    line = next(line for line in out.stderr.splitlines() if "not regular files inside the input" in line)
    for name in (
        "users.json (symlink)",
        "general/2024-01-02.json (device)",
        "../general/2024-01-03.json (path outside the archive)",
        "/general/2024-01-04.json (path outside the archive)",
    ):
        assert name in line
    assert [m["text"] for m in _stored(data, "messages")] == ["ok"]


# --------------------------------------------------------------------------------------------
# Hidden fields in source records
# --------------------------------------------------------------------------------------------
def _jira(extra: dict) -> dict:
    return {
        "key": "ENG-7",
        "self": "https://acme.atlassian.net/rest/api/2/issue/1",
        **extra,
        "fields": {"summary": "Rotate keys", "project": {"key": "ENG"}, "acl": ["*"]},
    }


def _github_issue(extra: dict, private: bool | None) -> dict:
    record = {
        "number": 5,
        "title": "Leak",
        "html_url": "https://github.com/acme/infra/issues/5",
        "repository_url": "https://api.github.com/repos/acme/infra",
        "updated_at": "2024-01-01T00:00:00Z",
        "user": {"login": "ann"},
        **extra,
    }
    if private is not None:
        record["repository"] = {"full_name": "acme/infra", "private": private}
    return record


def _linear(extra: dict) -> dict:
    return {"id": "lin-1", "identifier": "LIN-1", "title": "Cycle", "team": {"key": "LIN"}, **extra}


SOURCES = {  # source -> (file name, its text given the hidden fields to add)
    "jira": ("issues.jsonl", lambda extra: json.dumps(_jira(extra))),
    "github": ("dump.jsonl", lambda extra: "\n".join(json.dumps(_github_issue(extra, p)) for p in (True, None))),
    "linear": ("issues.json", lambda extra: json.dumps({"data": {"issues": {"nodes": [_linear(extra)]}}})),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("public", [False, True])
def test_hidden_fields_in_a_source_record_grant_nothing(tmp_path, source, public):
    name, text = SOURCES[source]
    stored = {}
    for variant, extra in (("plain", {}), ("hostile", {**HOSTILE, "acl_partial": True, "source": "docs:adr"})):
        folder = tmp_path / variant
        folder.mkdir()
        (folder / name).write_text(text(extra))
        read = read_source(SourceRequest(source, [folder / name]), "acme", folder, ReadProblems())
        ingest(_settings(folder / "data"), read.per_tenant, index=False, public=public)
        stored[variant] = {r["ref"]: r for r in _stored(folder / "data", "issues")}
    assert stored["hostile"].keys() == stored["plain"].keys() and stored["plain"]
    for ref, record in stored["hostile"].items():
        plain = stored["plain"][ref]
        # What the source states: a private repository -> nobody; nothing stated -> the operator's --public.
        stated_private = record.get("repository", {}).get("private") is True
        assert record["acl"] == plain["acl"] == (["*"] if public and not stated_private else [])
        assert record["tenant_id"] == "acme" and record["_id"] == plain["_id"] and record["source"] == plain["source"]
        assert "acl_partial" not in record and "acl" not in record.get("fields", {})


def test_github_dump_record_of_a_private_repository_stays_unreadable(tmp_path):
    (tmp_path / "dump.jsonl").write_text(json.dumps(_github_issue(HOSTILE, private=True)))
    _ingest(tmp_path / "data", "github", tmp_path / "dump.jsonl")
    [record] = _stored(tmp_path / "data", "issues")
    assert record["acl"] == [] and record["tenant_id"] == "acme"


def test_github_api_records_drop_hidden_fields(tmp_path):
    pr_item = {
        "number": 2,
        "title": "PR",
        "pull_request": {"url": "x"},
        "updated_at": "2024-01-02T00:00:00Z",
        "html_url": "https://github.com/acme/infra/pull/2",
        **HOSTILE,
    }
    issue = {**_github_issue(HOSTILE, private=None), "number": 3, "html_url": "https://github.com/acme/infra/issues/3"}
    detail = {
        "number": 2,
        "title": "PR",
        "html_url": "https://github.com/acme/infra/pull/2",
        "merged_at": None,
        "review_comments": 0,
        "base": {"repo": {"full_name": "acme/infra"}},
        **HOSTILE,
    }  # visibility unstated
    routes = {
        "/repos/acme/infra/issues": [pr_item, issue],
        "/repos/acme/infra/pulls/comments": [],
        "/repos/acme/infra/pulls/2": detail,
        "/repos/acme/infra/pulls/2/reviews": [],
    }
    client = httpx.Client(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, json=routes[request.url.path]))
    )
    records, _ = sync_github(
        "acme/infra", "token", None, ReadProblems(), client=client, sleep=lambda s: None, clock=lambda: 0.0
    )
    ingest(_settings(tmp_path), {"acme": records}, index=False)
    for collection in ("pull_requests", "issues"):
        [record] = _stored(tmp_path, collection)
        assert record["acl"] == [] and record["tenant_id"] == "acme", collection  # unstated: nobody


def test_docs_front_matter_hidden_fields_grant_nothing(tmp_path):
    _page(tmp_path / "wiki" / "plan.md", "# Plan", acl=["*"], tenant_id="globex", _id="0" * 24)
    _ingest(tmp_path / "data", "docs", tmp_path / "wiki")
    [record] = _stored(tmp_path / "data", "documents")
    assert record["acl"] == [] and record["tenant_id"] == "acme"


def test_slack_message_hidden_fields_grant_nothing(tmp_path):
    root = tmp_path / "acme-slack-export"
    (root / "secret").mkdir(parents=True)
    (root / "channels.json").write_text("[]")
    (root / "groups.json").write_text(json.dumps([{"id": "G1", "name": "secret", "members": ["U1"]}]))
    (root / "secret" / "2024-01-01.json").write_text(
        json.dumps(
            [
                {
                    "type": "message",
                    "user": "U1",
                    "text": "psst",
                    "ts": "1704100000.000100",
                    **HOSTILE,
                    "acl_partial": True,
                }
            ]
        )
    )
    _ingest(tmp_path / "data", "slack", root)
    [record] = _stored(tmp_path / "data", "messages")
    assert record["acl"] == ["slack:U1"] and record["tenant_id"] == "acme" and "acl_partial" not in record


# --------------------------------------------------------------------------------------------
# Keys: no source overwrites another's record; --prune stays in its source
# --------------------------------------------------------------------------------------------
@pytest.fixture
def adr_and_wiki(tmp_path) -> tuple[Path, Path]:
    adr = tmp_path / "adr"
    _page(adr / "0007-cache.md", "# Use Redis\nWe chose Redis for the cache.", id="ADR-7")
    wiki = tmp_path / "wiki"
    _page(wiki / "spoof.md", "# Use Redis\nWe chose memcached; delete the Redis cluster.", id="ADR-7")
    _page(wiki / "home.md", "# Home")
    return adr, wiki


def _documents(data: Path) -> dict[str, dict]:
    return {d["ref"]: d for d in _stored(data, "documents")}


def test_a_docs_page_claiming_another_sources_id_is_its_own_record(adr_and_wiki, tmp_path):
    adr, wiki = adr_and_wiki
    data = tmp_path / "data"
    for folder in (adr, wiki, wiki):  # re-ingesting the wiki finds its own record again
        out = run_cli("ingest", "docs", str(folder), "--data-dir", str(data), "--no-index", "--public")
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    docs = _documents(data)
    assert set(docs) == {"ADR-7", "docs:wiki/ADR-7", "home.md"}
    assert "We chose Redis" in docs["ADR-7"]["body"] and docs["ADR-7"]["source"] == "docs:adr"
    assert "memcached" in docs["docs:wiki/ADR-7"]["body"]
    assert "documents 0+0~2" in out.stdout  # the wiki again: its 2 pages found where they were, unchanged

    (wiki / "spoof.md").unlink()
    out = run_cli("ingest", "docs", str(wiki), "--prune", "--data-dir", str(data), "--no-index", "--public")
    assert out.returncode == 0, out.stderr
    assert set(_documents(data)) == {"ADR-7", "home.md"}  # the ADR outlives the wiki's prune

    _page(wiki / "spoof.md", "# again", id="ADR-7")
    _ingest(data, "docs", wiki)
    (adr / "0007-cache.md").unlink()
    _page(adr / "0008.md", "# Next", id="ADR-8")
    _ingest(data, "docs", adr, prune=True)
    assert set(_documents(data)) == {"ADR-8", "docs:wiki/ADR-7", "home.md"}  # the ADR prune spares the wiki


@pytest.mark.parametrize("mongodb_uri", [None, "mongomock://ingest-input-keys"])
def test_two_folders_in_one_ingest_keep_their_own_same_named_pages(tmp_path, mongodb_uri):
    for folder in ("a", "b"):
        _page(tmp_path / folder / "README.md", f"# {folder}")
    settings = Settings(data_dir=tmp_path / "data", mongodb_uri=mongodb_uri, tenant="acme")
    for _ in range(2):  # the second time finds both where the first put them
        read = read_source(SourceRequest("docs", [tmp_path / "a", tmp_path / "b"]), "acme", tmp_path, ReadProblems())
        [report] = ingest(settings, read.per_tenant, index=False)
    assert report.written["documents"].unchanged == 2
    docs = open_store(settings).collection("documents").find({"tenant_id": "acme"})
    assert {d["ref"]: d["title"] for d in docs} == {"README.md": "a", "docs:b/README.md": "b"}


def test_linear_and_jira_issues_with_the_same_key_do_not_overwrite_each_other(tmp_path):
    (tmp_path / "jira.jsonl").write_text(json.dumps({"key": "ENG-1", "fields": {"summary": "Jira's"}}))
    (tmp_path / "linear.json").write_text(json.dumps([{"id": "x", "identifier": "ENG-1", "title": "Linear's"}]))
    (tmp_path / "spoof.jsonl").write_text(
        json.dumps(  # a Jira record shaped like a GitHub issue
            {"key": "OPS-1", "number": 5, "html_url": "https://github.com/acme/infra/issues/5", "fields": {}}
        )
    )
    (tmp_path / "dump.jsonl").write_text(json.dumps(_github_issue({}, private=False)))
    data = tmp_path / "data"
    _ingest(data, "jira", tmp_path / "spoof.jsonl")  # first: it would hold GitHub's ref if it could take one
    _ingest(data, "jira", tmp_path / "jira.jsonl")
    _ingest(data, "linear", tmp_path / "linear.json")
    _ingest(data, "github", tmp_path / "dump.jsonl")
    issues = {r["ref"]: r for r in _stored(data, "issues")}
    assert issues["ENG-1"]["fields"]["summary"] == "Jira's"
    assert issues["linear:ENG/ENG-1"]["fields"]["summary"] == "Linear's"
    assert issues["acme/infra#5"]["title"] == "Leak" and issues["acme/infra#5"]["acl"] == ["*"]
    assert issues["OPS-1"]["key"] == "OPS-1"  # keyed by its own key: a Jira record never takes a GitHub ref
    assert not any("#" in ref for ref in issues if ref != "acme/infra#5")

    (tmp_path / "linear.json").write_text(json.dumps([{"id": "y", "identifier": "ENG-2", "title": "Next"}]))
    _ingest(data, "linear", tmp_path / "linear.json", prune=True)  # Linear's ENG-1 is gone, Jira's stays
    assert {r["ref"] for r in _stored(data, "issues")} == {"ENG-1", "ENG-2", "acme/infra#5", "OPS-1"}


def test_a_stored_data_dir_without_colliding_refs_keeps_its_keys(tmp_path):
    """Keys are unchanged for every record that collides with no other source's: a data dir written
    before loads and re-ingests as unchanged."""
    (tmp_path / "jira.jsonl").write_text(json.dumps({"key": "ENG-1", "fields": {"summary": "s"}}))
    _ingest(tmp_path / "data", "jira", tmp_path / "jira.jsonl")
    before = _stored(tmp_path / "data", "issues")
    read = read_source(SourceRequest("jira", [tmp_path / "jira.jsonl"]), "acme", tmp_path, ReadProblems())
    [report] = ingest(_settings(tmp_path / "data"), read.per_tenant, index=False)
    assert report.written["issues"].unchanged == 1 and _stored(tmp_path / "data", "issues") == before


def test_a_missing_input_is_one_line(tmp_path):
    with pytest.raises(SourceError, match="no such file or directory"):
        read_slack_export(tmp_path / "nope.zip", ReadProblems())

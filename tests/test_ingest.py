import gzip
import json

import pytest

from context_engine import ingest as ingest_module
from context_engine.config import HIDDEN_FIELDS, Settings
from context_engine.ingest import ingest
from context_engine.sources.github import read_github_dump
from context_engine.sources.problems import ReadProblems
from context_engine.store.documents import open_store
from tests.conftest import GITHUB_DUMP


def _pr(number, title="t", merged_at=None):
    return {
        "number": number,
        "title": title,
        "state": "closed" if merged_at else "open",
        "user": {"login": "octo"},
        "html_url": f"https://github.com/o/r/pull/{number}",
        "created_at": f"2026-01-0{number % 9 + 1}T10:00:00Z",
        "pull_request": {"url": "x", "merged_at": merged_at},
        "labels": [],
    }


def test_embedded_store_persists_and_survives_restart(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(settings, {"t1": {"pull_requests": [_pr(1), _pr(2, merged_at="2026-02-01T00:00:00Z")]}})
    store = open_store(settings)  # a new process would do exactly this
    docs = list(store.collection("pull_requests").find({"tenant_id": "t1"}))
    assert sorted(d["ref"] for d in docs) == ["o/r#1", "o/r#2"]
    merged = next(d for d in docs if d["ref"] == "o/r#2")
    assert merged["merged"] is True and merged["merged_at"].year == 2026  # dates are real dates


def test_reingest_upserts_without_duplicates_and_counts_changes(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(settings, {"t1": {"pull_requests": [_pr(1), _pr(2)]}})
    (report,) = ingest(settings, {"t1": {"pull_requests": [_pr(1), _pr(2, title="renamed"), _pr(3)]}})
    stats = report.written["pull_requests"]
    assert (stats.inserted, stats.updated, stats.unchanged) == (1, 1, 1)
    assert open_store(settings).collection("pull_requests").count_documents({}) == 3


def test_malformed_record_is_skipped_and_counted(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    (report,) = ingest(settings, {"t1": {"pull_requests": [_pr(1), {"title": "no number"}, "junk"]}})
    assert report.skipped == 2 and report.records == 1


def test_a_record_no_store_can_hold_is_skipped_and_counted_not_the_whole_batch(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    operator = {**_pr(2), "$where": "sleep(1000)"}
    nested_operator = {**_pr(3), "user": {"login": "x", "$gt": ""}}
    nul_name = {**_pr(4), "a\x00b": 1}
    huge = {**_pr(5), "labels": [{"id": 2**64}]}
    (report,) = ingest(settings, {"t1": {"pull_requests": [_pr(1), operator, nested_operator, nul_name, huge, _pr(6)]}})
    assert (report.skipped, report.records) == (4, 2)
    assert any("'$where' cannot be stored" in p for p in report.problems)
    assert any("64 bits" in p for p in report.problems)
    refs = sorted(d["ref"] for d in open_store(settings).collection("pull_requests").find({"tenant_id": "t1"}))
    assert refs == ["o/r#1", "o/r#6"]


def test_failed_ingest_leaves_previous_data_usable(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(settings, {"t1": {"pull_requests": [_pr(1)]}})

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest_module, "refresh_catalog", explode)
    monkeypatch.setattr("context_engine.store.documents.DocumentStore.commit", explode)
    with pytest.raises(RuntimeError):
        ingest(settings, {"t1": {"pull_requests": [_pr(2), _pr(3)]}})
    monkeypatch.undo()
    assert open_store(settings).collection("pull_requests").count_documents({}) == 1


def test_tenants_are_separate_even_for_identical_records(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(settings, {"t1": {"pull_requests": [_pr(1)]}, "t2": {"pull_requests": [_pr(1)]}})
    coll = open_store(settings).collection("pull_requests")
    assert coll.count_documents({"tenant_id": "t1"}) == 1 and coll.count_documents({"tenant_id": "t2"}) == 1


def test_github_dump_reader_reports_bad_lines(tmp_path):
    path = tmp_path / "dump.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps(_pr(1)) + "\n{not json\n" + json.dumps([1]) + "\n")
    problems = ReadProblems()
    out = read_github_dump([path], problems)
    assert len(out["pull_requests"]) == 1 and problems.count == 2
    assert "dump.jsonl.gz:2" in problems.examples[0]


@pytest.mark.slow
@pytest.mark.skipif(not GITHUB_DUMP.exists(), reason="../shared/data is not beside this checkout")
def test_real_github_dump_ingests_exactly_and_idempotently(tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    problems = ReadProblems()
    batches = read_github_dump([GITHUB_DUMP], problems)
    assert (len(batches["pull_requests"]), len(batches["issues"]), problems.count) == (4239, 3019, 0)
    ingest(settings, {"hf": batches}, index=False)  # structured ingest only: embedding 8k chunks takes long
    (again,) = ingest(settings, {"hf": read_github_dump([GITHUB_DUMP], ReadProblems())}, index=False)
    assert again.written["pull_requests"].unchanged == 4239 and again.written["issues"].unchanged == 3019
    store = open_store(settings)
    assert store.collection("pull_requests").count_documents({"tenant_id": "hf"}) == 4239
    assert store.collection("pull_requests").count_documents({"tenant_id": "hf", "merged": True}) == 3557
    assert store.collection("issues").count_documents({"tenant_id": "hf"}) == 3019


def test_schema_discovery_on_sample(settings):
    from context_engine.resources import catalog_for

    schemas = catalog_for(settings).schemas
    prs = schemas["pull_requests"]
    assert {"user.login", "labels.name", "reviews.user.login", "merged_at", "base.repo.full_name"} <= set(prs.fields)
    assert prs.is_date("merged_at") and prs.fields["labels.name"].in_array
    assert set(prs.fields["state"].enum) == {"open", "closed"}
    assert "security" in prs.fields["labels.name"].enum
    assert prs.fields["title"].enum is None and prs.fields["html_url"].enum is None  # free text, URLs
    assert "Done" in schemas["issues"].fields["fields.status.name"].enum
    for schema in schemas.values():
        assert not any(path.split(".")[0] in HIDDEN_FIELDS for path in schema.fields)
        assert "tenant_id" not in schema.describe()


def test_text_search_sees_a_write_made_in_the_same_process(tmp_path):
    from context_engine.query.execute import run_pipeline
    from context_engine.query.fulltext import _CACHE
    from context_engine.query.schema import schema_from_documents

    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    ingest(settings, {"t1": {"pull_requests": [_pr(1, title="flux capacitor")]}}, public=True)
    store = open_store(settings)
    schema = schema_from_documents("pull_requests", [_pr(1)])  # full text over `title`
    search = [{"$match": {"$text": {"$search": "zeppelin"}}}]
    assert run_pipeline(store, "pull_requests", search, tenant="t1", principals=[], schema=schema) == []
    store.upsert("pull_requests", "t1", [dict(_pr(2, title="zeppelin"), ref="o/r#2", acl=["*"])])
    rows = run_pipeline(store, "pull_requests", search, tenant="t1", principals=[], schema=schema)
    assert [r["ref"] for r in rows] == ["o/r#2"]
    assert sum(1 for key in _CACHE if key[0] == id(store.db) and key[2] == "t1") == 1  # replaced, not piled up


def test_find_refs_answers_as_the_scoped_find_does(settings):
    from context_engine.query.execute import scope_filter
    from context_engine.store.documents import open_store

    store = open_store(settings)
    refs = [d["ref"] for d in store.collection("messages").find({"tenant_id": "acme"})]
    for principals in ([], ["slack:U0DCC75DEF"]):  # sokafor, a member of #security-private
        scope = scope_filter("acme", principals)
        expected = {d["ref"] for d in store.collection("messages").find({**scope, "ref": {"$in": refs}})}
        found = store.find_refs("messages", scope, refs + ["no-such-ref"])
        assert {d["ref"] for d in found} == expected and len(found) == len(expected)
    assert len(expected) > len({d["ref"] for d in store.find_refs("messages", scope_filter("acme", []), refs)})
    assert store.find_refs("messages", scope_filter("globex", ["slack:U0DCC75DEF"]), refs) == []


def test_rows_round_trip_dates_nul_strings_and_the_tagged_format(tmp_path):
    """Datetimes at any depth come back as datetimes; strings that look like the old tags stay strings;
    rows written in the tagged format (before the `dates` column) are still read."""
    import sqlite3
    from datetime import datetime

    from context_engine.store.sqlite_file import StoreFile

    doc = {
        "_id": "x",
        "at": datetime(2026, 11, 30, 12, 0, 1),
        "nested": {"list": [datetime(2025, 1, 2), "\x00d:not a date"]},
        "plain": "\x00s:kept",
        "n": 1.5,
    }
    file = StoreFile(tmp_path / "store.sqlite", create=True)
    file.write([("documents", "x", doc)])
    assert list(file.read("documents")) == [doc]
    legacy = sqlite3.connect(tmp_path / "store.sqlite")
    legacy.execute(
        "INSERT INTO docs (coll, id, body, dates) VALUES ('documents', 'old', ?, NULL)",
        ('{"_id":"old","at":"\\u0000d:2026-01-02T03:04:05","s":"\\u0000s:\\u0000raw"}',),
    )
    legacy.commit()
    old = next(d for d in file.read("documents") if d["_id"] == "old")
    assert old == {"_id": "old", "at": datetime(2026, 1, 2, 3, 4, 5), "s": "\x00raw"}


def test_the_tenant_list_is_kept_by_writes_and_read_without_a_scan(tmp_path):
    """`tenants()` reads the list `write` keeps: tenants appear with their first record and go with
    their last; a store written before the list existed is scanned, and its next write keeps it."""
    import sqlite3

    from context_engine.store.sqlite_file import StoreFile

    file = StoreFile(tmp_path / "store.sqlite", create=True)
    assert file.tenants() == []
    file.write(
        [
            ("issues", "a1", {"_id": "a1", "tenant_id": "acme"}),
            ("issues", "a2", {"_id": "a2", "tenant_id": "acme"}),
            ("issues", "g1", {"_id": "g1", "tenant_id": "globex"}),
        ]
    )
    assert file.tenants() == ["acme", "globex"]
    file.write([("issues", "a1", None), ("issues", "g1", None)])  # acme keeps a2, globex has nothing left
    assert file.tenants() == ["acme"]
    file.write(
        [
            ("issues", "g2", {"_id": "g2", "tenant_id": "globex"}),
            ("issues", "g2", None),
            ("issues", "g3", {"_id": "g3", "tenant_id": "globex"}),
        ]
    )
    assert file.tenants() == ["acme", "globex"]

    older = sqlite3.connect(tmp_path / "store.sqlite")  # as a release that did not keep the list left it
    older.execute("DELETE FROM meta WHERE key = 'tenants'")
    older.execute("""INSERT INTO docs (coll, id, body) VALUES ('issues', 'i1', '{"_id":"i1","tenant_id":"initech"}')""")
    older.commit()
    assert file.tenants() == ["acme", "globex", "initech"]
    file.write([("issues", "a2", None)])
    assert file.tenants() == ["globex", "initech"]
    assert older.execute("SELECT value FROM meta WHERE key = 'tenants'").fetchone() == ('["globex", "initech"]',)

    for damaged in ("{not json", '{"acme": 1}', '["globex", 7]'):  # derived data: the rows decide
        older.execute("UPDATE meta SET value = ? WHERE key = 'tenants'", (damaged,))
        older.commit()
        assert file.tenants() == ["globex", "initech"]
    file.write([("issues", "a3", {"_id": "a3", "tenant_id": "acme"})])
    assert file.tenants() == ["acme", "globex", "initech"]

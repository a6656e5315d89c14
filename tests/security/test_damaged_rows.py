"""Class 7 (faults stay local): one damaged row of the embedded store is skipped and counted for itself
alone. Every other record of its tenant, and every record of every other tenant, answers as before,
through each way the store is read: the loaded collections (mongomock), rows read by id or row
number, the SQL scans of schema discovery and the tenant list, the link index, and the next commit.
A damaged row never becomes a record of another tenant or of a wider access list either."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from context_engine.answering.links import LinkIndex
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.kinds import BUILTIN_NAMES as COLLECTIONS
from context_engine.query.execute import scope_filter
from context_engine.sources.sample import generate
from context_engine.store.documents import open_store, record_id
from context_engine.store.sqlite_file import DAMAGED_GENERATION, FILE_NAME, loads
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    """The sample organisation (tenants acme and globex), and the rows the damage is done to: a
    globex pull request (`victim`) and the acme pull request whose id a damaged row may claim."""
    data = tmp_path_factory.mktemp("damaged") / "data"
    ingest(Settings(data_dir=data, mongodb_uri=None), generate(), index=False)
    con = sqlite3.connect(data / FILE_NAME)
    pick = (
        "SELECT seq, id, body, dates FROM docs WHERE coll = 'pull_requests' "
        "AND json_extract(body, '$.tenant_id') = ? ORDER BY seq LIMIT 1"
    )
    victim = con.execute(pick, ("globex",)).fetchone()
    acme = con.execute(pick, ("acme",)).fetchone()
    counts = {
        tenant: dict(
            con.execute(
                "SELECT coll, count(*) FROM docs WHERE json_extract(body, '$.tenant_id') = ? GROUP BY coll", (tenant,)
            ).fetchall()
        )
        for tenant in ("acme", "globex")
    }
    # the pull requests every member may read, the victim left out: what a scoped read must find
    public = {
        tenant: con.execute(
            "SELECT count(*) FROM docs, json_each(body, '$.acl') WHERE coll = 'pull_requests' "
            "AND json_extract(body, '$.tenant_id') = ? AND json_each.value = '*' AND seq != ?",
            (tenant, victim[0]),
        ).fetchone()[0]
        for tenant in ("acme", "globex")
    }
    con.close()
    return {"data": data, "victim": victim, "acme": acme, "counts": counts, "public": public}


def _body(original: str, **fields) -> str:
    return json.dumps({**json.loads(original), **fields})


# kind -> (body, dates) of the damaged row, from (its body, its dates, the acme record's id)
DAMAGE = {
    "invalid JSON": lambda body, dates, acme_id: ("{not json", dates),
    "truncated JSON": lambda body, dates, acme_id: (body[: len(body) // 2], dates),
    "nested too deep": lambda body, dates, acme_id: ("[" * 100_000 + "]" * 100_000, None),
    "body is a list": lambda body, dates, acme_id: ("[1, 2]", dates),
    "body is a string": lambda body, dates, acme_id: ('"a record"', None),
    "body is null": lambda body, dates, acme_id: ("null", None),
    "_id of another tenant's record": lambda body, dates, acme_id: (_body(body, _id=acme_id), dates),
    "_id not a string": lambda body, dates, acme_id: (_body(body, _id=7), dates),
    "tenant_id lists both tenants": lambda body, dates, acme_id: (_body(body, tenant_id=["acme", "globex"]), dates),
    "tenant_id a number": lambda body, dates, acme_id: (_body(body, tenant_id=1), dates),
    "acl the string '*'": lambda body, dates, acme_id: (_body(body, acl="*"), dates),
    "acl with a non-string": lambda body, dates, acme_id: (_body(body, acl=["*", {"$ne": None}]), dates),
    "ref a number": lambda body, dates, acme_id: (_body(body, ref=812), dates),
    "dates not JSON": lambda body, dates, acme_id: (body, "[[not"),
    "dates at a path the body lacks": lambda body, dates, acme_id: (body, '[[["nowhere", 3], "2026-01-01T00:00:00"]]'),
    "a date that is not one": lambda body, dates, acme_id: (body, '[[["created_at"], "yesterday"]]'),
    "dates not pairs": lambda body, dates, acme_id: (body, "[1, 2]"),
    "dates a number": lambda body, dates, acme_id: (body, 5),
    "tagged date that is not one": lambda body, dates, acme_id: (_body(body, created_at="\u0000d:yesterday"), None),
}


# Damage an SQL scan does not look for (it checks that the JSON is readable and that `tenant_id` and
# `acl` cannot widen the scope, and nothing else, to stay as fast as before): schema discovery's count
# still counts such a row, within its own tenant and access list only, while every read skips it.
FOUND_WHEN_PARSED = {
    "_id of another tenant's record",
    "_id not a string",
    "acl with a non-string",
    "ref a number",
    "dates not JSON",
    "dates at a path the body lacks",
    "a date that is not one",
    "dates not pairs",
    "dates a number",
    "tagged date that is not one",
}


def _damaged_copy(sample: dict, tmp_path: Path, kind: str) -> Path:
    data = tmp_path / "data"
    shutil.copytree(sample["data"], data)
    seq, _id, body, dates = sample["victim"]
    con = sqlite3.connect(data / FILE_NAME)
    con.execute(
        "UPDATE docs SET body = ?, dates = ? WHERE seq = ?", (*DAMAGE[kind](body, dates, sample["acme"][1]), seq)
    )
    # the store then scans the rows for its tenants, and the link index reads every row again
    con.execute("DELETE FROM meta WHERE key = 'tenants'")
    con.commit()
    con.close()
    # derived state, rebuilt from the rows: the catalog by schema discovery in SQL, the link index from every row
    shutil.rmtree(data / "catalog")
    (data / "links.sqlite").unlink()
    return data


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_row_is_skipped_and_counted_alone(sample, tmp_path, kind):
    data = _damaged_copy(sample, tmp_path, kind)
    victim_ref = json.loads(sample["victim"][2])["ref"]
    acme_ref = json.loads(sample["acme"][2])["ref"]
    store = open_store(Settings(data_dir=data, mongodb_uri=None))
    assert store.tenants() == ["acme", "globex"]  # the SQL scan of every row's tenant

    # SQL in place (schema discovery of a collection not loaded): scope, count, sample, distinct values
    for tenant in ("acme", "globex"):
        scoped = store.scoped("pull_requests", scope_filter(tenant, ["github:nobody"]))
        assert type(scoped).__name__ == "StoredScope"  # answered by SQLite, the collection not loaded
        public = scoped.sample(10_000, 10_000)
        assert len(public) == sample["public"][tenant]
        assert scoped.count() == len(public) + (tenant == "globex" and kind in FOUND_WHEN_PARSED)
        assert victim_ref not in {d["ref"] for d in public}
        assert set(scoped.distinct_values([["state"]])[0]) == {d["state"] for d in public}
    assert store.find_refs("pull_requests", {"tenant_id": "globex"}, [victim_ref]) == []  # by id, not loaded

    # the loaded collections: every other record of both tenants, nothing of the damaged row anywhere
    for name in COLLECTIONS:
        for tenant in ("acme", "globex"):
            expected = sample["counts"][tenant].get(name, 0) - (tenant == "globex" and name == "pull_requests")
            assert store.count(name, tenant) == expected, (name, tenant)
    everything = list(store.collection("pull_requests").find({}))
    assert victim_ref not in {d["ref"] for d in everything}
    [acme_record] = store.find_refs("pull_requests", {"tenant_id": "acme"}, [acme_ref])
    assert acme_record == loads(*sample["acme"][2:])  # its own row, even where the damaged one claims its id
    assert acme_record["_id"] == record_id("acme", acme_ref)
    assert store.damaged_rows() == {"pull_requests": 1}

    LinkIndex.synced(store)  # the link index reads every row again: the damaged one links nothing

    # the next commit (a write that scans tenants and deletes beside the damaged row) still works
    store.upsert("issues", "acme", [{"ref": "acme/x#1", "title": "after the damage", "acl": ["*"]}])
    store.commit()
    again = open_store(Settings(data_dir=data, mongodb_uri=None))
    assert again.tenants() == ["acme", "globex"]
    assert again.count("issues", "acme") == sample["counts"]["acme"]["issues"] + 1


def test_the_damaged_row_reaches_nobody_through_the_cli(sample, tmp_path):
    """Across tenants through the whole program: `query` and `ask` of both tenants answer with every
    sound record and one warning line that counts the skipped row; `status` reports it; no traceback."""
    data = _damaged_copy(sample, tmp_path, "acl the string '*'")
    for tenant in ("acme", "globex"):
        out = run_cli("query", "pull_requests", '[{"$count": "n"}]', "--data-dir", str(data), "--tenant", tenant)
        expected = sample["counts"][tenant]["pull_requests"] - (tenant == "globex")
        public = json.loads(out.stdout)["records"][0]["n"]
        assert out.returncode == 0 and public <= expected, out.stderr
        [warning] = out.stderr.splitlines()
        assert "skipped 1 damaged row(s) of pull_requests" in warning and "Traceback" not in out.stderr
        asked = run_cli("ask", "how many PRs were merged last week", "--data-dir", str(data), "--tenant", tenant)
        assert asked.returncode == 0 and asked.stdout.strip(), asked.stderr
        assert len(asked.stderr.splitlines()) <= 1 and "Traceback" not in asked.stderr
    status = run_cli("status", "--data-dir", str(data), "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["damaged_rows"] == {"pull_requests": 1}


def test_the_public_count_is_the_same_with_the_row_damaged_or_removed(sample, tmp_path):
    """The damaged row is skipped, not guessed at: a `query` sees exactly what it sees with the row gone."""
    damaged = _damaged_copy(sample, tmp_path, "invalid JSON")
    removed = tmp_path / "removed"
    shutil.copytree(sample["data"], removed)
    con = sqlite3.connect(removed / FILE_NAME)
    con.execute("DELETE FROM docs WHERE seq = ?", (sample["victim"][0],))
    con.commit()
    con.close()
    pipeline = '[{"$group": {"_id": "$state", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]'
    outs = [
        run_cli("query", "pull_requests", pipeline, "--data-dir", str(d), "--tenant", "globex")
        for d in (damaged, removed)
    ]
    assert outs[0].returncode == outs[1].returncode == 0 and outs[0].stdout == outs[1].stdout, outs[0].stderr


@pytest.mark.parametrize("value", ["abc", "", "1.5", "-3", "9" * 30 + "x"])
def test_a_non_numeric_generation_rebuilds_what_was_derived_and_the_next_commit_renumbers(sample, tmp_path, value):
    data = tmp_path / "data"
    shutil.copytree(sample["data"], data)
    con = sqlite3.connect(data / FILE_NAME)
    con.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (value,))
    con.execute("UPDATE meta SET value = ? WHERE key = 'seq'", (value,))
    con.commit()
    con.close()
    out = run_cli("query", "pull_requests", '[{"$count": "n"}]', "--data-dir", str(data), "--tenant", "acme")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    store = open_store(Settings(data_dir=data, mongodb_uri=None))
    assert store.generation == DAMAGED_GENERATION
    store.upsert("issues", "acme", [{"ref": "acme/x#1", "title": "after the damage", "acl": ["*"]}])
    store.commit()
    # numbered past any count of commits: a catalog stamped before the damage can never match it
    assert (
        store.generation > 1_000_000
        and open_store(Settings(data_dir=data, mongodb_uri=None)).generation == store.generation
    )


def _not_a_database(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 200)


def _truncated(path: Path) -> None:
    with open(path, "r+b") as file:
        file.truncate(20_000)


def _another_schema(path: Path) -> None:
    path.unlink()
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE docs (x TEXT)")
    con.commit()
    con.close()


@pytest.mark.parametrize("damage", [_not_a_database, _truncated, _another_schema], ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_store_file_is_one_line_exit_4(sample, tmp_path, damage):
    data = tmp_path / "data"
    shutil.copytree(sample["data"], data)
    con = sqlite3.connect(data / FILE_NAME)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every record in the main file, which is then damaged
    con.close()
    assert (data / FILE_NAME).stat().st_size > 1_000_000
    damage(data / FILE_NAME)
    for command in (["query", "pull_requests", '[{"$count": "n"}]'], ["ingest", "sample", "--no-index"]):
        out = run_cli(*command, "--data-dir", str(data))
        assert out.returncode == 4 and len(out.stderr.splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr and "the store" in out.stderr


@pytest.mark.parametrize("value", ["abc", "-1", ""])
def test_a_damaged_link_index_counter_rebuilds_the_link_index(sample, tmp_path, value):
    """The link index is derived from the rows: a row counter that is not a whole number rebuilds it (it
    was a ValueError that refused every later ingest)."""
    data = tmp_path / "data"
    shutil.copytree(sample["data"], data)
    links = sqlite3.connect(data / "links.sqlite")
    entries = links.execute("SELECT count(*) FROM entries").fetchone()[0]
    links.execute("UPDATE meta SET value = ? WHERE key = 'seq'", (value,))
    links.execute("UPDATE meta SET value = 'stale' WHERE key = 'generation'")  # so that the next sync reads rows
    links.commit()
    LinkIndex.synced(open_store(Settings(data_dir=data, mongodb_uri=None)))
    assert entries > 0 and links.execute("SELECT count(*) FROM entries").fetchone()[0] == entries
    assert links.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0].isdigit()
    links.close()


def test_a_record_holding_nan_fails_no_scan_of_any_tenant(sample, tmp_path):
    """NaN is sound to the store (json writes it, the loaded collection holds it) but not JSON to this
    SQLite: a scan in place steps over the row instead of failing every tenant's schema discovery."""
    data = tmp_path / "data"
    shutil.copytree(sample["data"], data)
    seq, _, body, _ = sample["victim"]
    con = sqlite3.connect(data / FILE_NAME)
    con.execute("UPDATE docs SET body = ? WHERE seq = ?", (body[:-1] + ',"score":NaN}', seq))
    con.execute("DELETE FROM meta WHERE key = 'tenants'")
    con.commit()
    con.close()
    store = open_store(Settings(data_dir=data, mongodb_uri=None))
    assert store.tenants() == ["acme", "globex"]
    for tenant in ("acme", "globex"):
        scoped = store.scoped("pull_requests", scope_filter(tenant, ["github:nobody"]))
        assert scoped.count() == len(scoped.sample(10_000, 10_000)) == sample["public"][tenant]
    [held] = store.find_refs("pull_requests", {"tenant_id": "globex"}, [json.loads(body)["ref"]])
    assert held["score"] != held["score"] and store.damaged_rows() == {}

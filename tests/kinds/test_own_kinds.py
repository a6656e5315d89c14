"""A team's own collections: the store's kinds (`save_kind`, `kinds`), `ingest json`, `ingest mongodb`,
and what every surface then does with them (schema, query, ask), access included."""

import json
import shutil

import pytest

from context_engine.config import Settings
from context_engine.kinds import CollectionSpec, SpecError
from context_engine.query.catalog import build_catalog
from context_engine.store.documents import StoreError, open_store
from tests.conftest import REPO_ROOT, run_cli

INCIDENTS = CollectionSpec(
    name="incidents", noun="incident", key="id", ref_prefix="INC-", times={"created": ("opened_at",)}, text=("title",)
)


def _embedded(tmp_path):
    return Settings(data_dir=tmp_path, mongodb_uri=None)


# ---------------------------------------------------------------------------------------- the store
@pytest.mark.parametrize("uri", [None, "mongomock://own-kinds"])
def test_a_kind_is_committed_with_its_records_and_seen_by_a_new_process(tmp_path, uri):
    settings = Settings(data_dir=tmp_path, mongodb_uri=uri)
    store = open_store(settings)
    store.save_kind("acme", INCIDENTS)
    store.upsert("incidents", "acme", [{"ref": "INC-1", "id": 1, "title": "db down", "acl": ["*"]}])
    store.commit()
    fresh = open_store(settings)
    if uri is None:
        assert "incidents" in fresh._unread  # read lazily like a built-in collection
    assert fresh.kinds("acme").get("incidents") == INCIDENTS
    assert "incidents" not in fresh.kinds("globex")  # a kind is one tenant's
    assert "incidents" in fresh.collections() and "collection_kinds" not in fresh.collections()
    assert [d["ref"] for d in fresh.collection("incidents").find({"tenant_id": "acme"})] == ["INC-1"]
    assert fresh.tenants() == ["acme"]
    assert fresh.damaged_rows() == {}


def test_an_uncommitted_kind_is_not_seen_elsewhere(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    assert "incidents" in store.kinds("acme")
    assert "incidents" not in open_store(_embedded(tmp_path)).kinds("acme")


def test_a_new_spec_replaces_the_stored_one(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.commit()
    renamed = CollectionSpec(name="incidents", noun="outage", key="id")
    store.save_kind("acme", renamed)
    store.commit()
    assert open_store(_embedded(tmp_path)).kinds("acme").get("incidents") == renamed


@pytest.mark.parametrize("name", ["pull_requests", "people", "collection_kinds", "store_meta", "index_vectors"])
def test_a_builtin_or_reserved_name_is_never_a_tenants_own(tmp_path, name):
    store = open_store(_embedded(tmp_path))
    with pytest.raises(SpecError, match="taken by the engine"):
        store.save_kind("acme", CollectionSpec(name=name, noun="thing", key="id"))


@pytest.mark.parametrize("name", ["collection_kinds", "incidents", "system.x", "$where", "a.b", "", None, ["x"]])
def test_only_known_collections_are_handed_out(tmp_path, name):
    store = open_store(_embedded(tmp_path))
    with pytest.raises(StoreError, match="unknown collection"):
        store.collection(name)
    with pytest.raises(StoreError, match="unknown collection"):
        store.scoped(name, {"tenant_id": "acme", "acl": {"$in": ["*"]}})


def test_records_go_only_to_a_kind_of_their_tenant(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    with pytest.raises(StoreError, match="not a kind of tenant 'globex'"):
        store.upsert("incidents", "globex", [{"ref": "INC-1"}])


def test_a_damaged_stored_spec_leaves_out_that_kind_only(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.save_kind("acme", CollectionSpec(name="deploys", noun="deploy", key="id"))
    store.commit()
    store.file.conn.execute(
        "UPDATE docs SET body = json_set(body, '$.spec.key', '$bad') "
        "WHERE coll = 'collection_kinds' AND body LIKE '%incidents%'"
    )
    assert [s.name for s in open_store(_embedded(tmp_path)).kinds("acme").own()] == ["deploys"]


def test_the_catalog_discovers_own_kinds_with_their_spec(tmp_path):
    store = open_store(_embedded(tmp_path))
    store.save_kind("acme", INCIDENTS)
    store.upsert(
        "incidents",
        "acme",
        [
            {"ref": "INC-1", "id": 1, "title": "db down", "acl": ["*"]},
            {"ref": "INC-2", "id": 2, "title": "secret", "acl": ["github:dana"]},
        ],
    )
    store.commit()
    fresh = open_store(_embedded(tmp_path))
    schema = build_catalog(fresh, "acme").schemas["incidents"]
    assert schema.own_kind == INCIDENTS and schema.kind.noun == "incident"
    assert schema.total == 1  # the private one is not counted for the public view
    assert build_catalog(fresh, "acme", ["github:dana"]).schemas["incidents"].total == 2
    assert "incidents" not in build_catalog(fresh, "globex").schemas


# ---------------------------------------------------------------------------------------- the CLI
OWN_DATA = REPO_ROOT / "examples" / "own-data"
INCIDENTS_JSON, DEPLOYS_CSV = OWN_DATA / "incidents.json", OWN_DATA / "deploys.csv"
PRIVATE = "incidents/110"  # readable by github:priyar and github:mgarcia only
MEMBER, OUTSIDER = "priyar", "rsh-dev"


def _cli(data_dir, *args):
    return run_cli(*args, "--data-dir", str(data_dir))


@pytest.fixture(scope="module")
def own_dir(sample_dir, tmp_path_factory):
    """The sample organisation plus its incidents (JSON, one private) and deploys (CSV)."""
    data_dir = tmp_path_factory.mktemp("own") / "data"
    shutil.copytree(sample_dir, data_dir)
    incidents = _cli(
        data_dir,
        "ingest",
        "json",
        str(INCIDENTS_JSON),
        "--collection",
        "incidents",
        "--access-field",
        "visible_to",
        "--public",
    )
    deploys = _cli(data_dir, "ingest", "json", str(DEPLOYS_CSV), "--collection", "deploys", "--public")
    assert incidents.returncode == 0 and deploys.returncode == 0, incidents.stderr + deploys.stderr
    return data_dir, incidents.stdout, deploys.stdout


def test_ingest_prints_what_it_inferred_then_the_counts(own_dir):
    _, incidents, deploys = own_dir
    for line in (
        "incidents: key: id (inferred)",
        "incidents: ref: incidents/<id> (inferred)",
        "incidents: time created: opened_at (inferred)",
        "incidents: reference pr: pull_requests (inferred)",
        "incidents: access: from field 'visible_to', else the whole tenant (--public)",
        "tenant acme: 24 records (incidents 24+0~0",
    ):
        assert line in incidents, line
    assert "deploys: key: deploy_id (inferred)" in deploys and "tenant acme: 30 records (deploys 30+0~0" in deploys
    assert "person author: deployed_by" in deploys


def _schema(data_dir, *asker):
    out = _cli(data_dir, "schema", "--json", *asker)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_schema_lists_own_collections_with_their_fields(own_dir):
    data_dir, *_ = own_dir
    schemas = _schema(data_dir)
    incidents = {f["path"]: f for f in schemas["incidents"]["fields"]}
    assert {"title", "severity", "commander", "opened_at", "pr", "summary"} <= set(incidents)
    assert "visible_to" not in incidents and "acl" not in incidents and "tenant_id" not in incidents
    assert schemas["incidents"]["kind"]["noun"] == "incident"
    assert {"deploy_id", "deployed_at", "status", "duration_seconds"} <= {
        f["path"] for f in schemas["deploys"]["fields"]
    }
    assert "collection_kinds" not in schemas


def test_status_counts_own_collections(own_dir):
    data_dir, *_ = own_dir
    status = json.loads(_cli(data_dir, "status", "--json").stdout)
    assert status["tenants"]["acme"]["records"]["incidents"] == 24
    assert status["tenants"]["acme"]["records"]["deploys"] == 30


def _query(data_dir, collection, pipeline, *asker):
    out = _cli(data_dir, "query", collection, json.dumps(pipeline), *asker)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["records"]


def test_query_an_own_collection_within_the_askers_access(own_dir):
    data_dir, *_ = own_dir
    sev1 = [{"$match": {"severity": "sev1"}}, {"$project": {"ref": 1, "title": 1}}]
    public = {r["ref"] for r in _query(data_dir, "incidents", sev1)}
    outsider = {r["ref"] for r in _query(data_dir, "incidents", sev1, "--as", OUTSIDER)}
    member = {r["ref"] for r in _query(data_dir, "incidents", sev1, "--as", MEMBER)}
    assert public and PRIVATE not in public and outsider == public
    assert member == public | {PRIVATE}
    everything = _query(data_dir, "incidents", [{"$count": "n"}], "--as", OUTSIDER)
    assert everything == [{"n": 23}]
    assert _query(data_dir, "deploys", [{"$match": {"status": "failed"}}, {"$count": "n"}]) == [{"n": 3}]


def test_a_non_member_never_sees_the_private_incident_in_schema_enumerations(own_dir):
    data_dir, *_ = own_dir

    def statuses(*asker):
        fields = {f["path"]: f for f in _schema(data_dir, *asker)["incidents"]["fields"]}
        return set(fields["status"].get("enum") or fields["status"].get("values") or [])

    assert "contained" not in statuses("--as", OUTSIDER) and "contained" not in statuses()
    assert "contained" in statuses("--as", MEMBER)
    assert "Card numbers" not in _cli(data_dir, "schema", "--as", OUTSIDER).stdout


def test_value_search_confirms_an_own_value_readable_by_the_asker(own_dir):
    from context_engine.resources import principals_for, value_index_for

    data_dir, *_ = own_dir
    for asker, found in ((OUTSIDER, False), (MEMBER, True)):
        settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", asker=asker, use_llm=False)
        index = value_index_for(settings)
        assert principals_for(settings)
        assert any(m.value == "contained" for m in index.search("contained incidents", limit=20)) is found
        assert any(m.value == "web-frontend" for m in index.search("web-frontend incidents", limit=20))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--collection", "pull_requests", "--public"], "taken by the engine"),
        (["--collection", "collection_kinds", "--public"], "taken by the engine"),
        (["--collection", "bad.name", "--public"], "is not allowed"),
        (["--public"], "needs --collection"),
        (["--collection", "incidents", "--time", "opened_at"], "expected ROLE=FIELD"),
        (["--collection", "incidents", "--person", "lead=commander:okta"], "handle 'okta'"),
        (["--collection", "incidents", "--text", "$where"], "not a field path"),
        (["--collection", "incidents", "--access-field", "acl.x"], "not a field path"),
        (["--collection", "incidents", "--spec", "nope.json", "--key", "id"], "leave out --key"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, message):
    out = _cli(tmp_path, "ingest", "json", str(INCIDENTS_JSON), *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_own_options_are_refused_for_other_sources(tmp_path):
    out = _cli(tmp_path, "ingest", "docs", str(tmp_path), "--collection", "incidents")
    assert out.returncode == 2 and "for `ingest json` and `ingest mongodb` only" in out.stderr


def test_an_unnamespaced_principal_refuses_the_whole_ingest(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"id": 1, "who": "github:priyar"}, {"id": 2, "who": "priyar"}]))
    out = _cli(tmp_path / "data", "ingest", "json", str(rows), "--collection", "incidents", "--access-field", "who")
    assert out.returncode == 2 and "'priyar', not a principal" in out.stderr and "Traceback" not in out.stderr
    assert (
        not (tmp_path / "data" / "store.sqlite").exists()
        or "incidents" not in _cli(tmp_path / "data", "status", "--json").stdout
    )


def test_without_access_nobody_reads_and_the_operator_is_told(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("id,title\n1,a\n2,b\n")
    out = _cli(tmp_path, "ingest", "json", str(rows), "--collection", "notes", "--no-index")
    assert out.returncode == 0 and "nobody can read these records" in out.stderr
    assert "notes: access: nobody" in out.stdout
    assert _query(tmp_path, "notes", [{"$count": "n"}]) == [{"n": 0}]


def test_a_reingest_with_another_spec_replaces_it_and_prune_removes_gone_rows(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("id,title,team\n1,a,x\n2,b,y\n")
    assert _cli(tmp_path, "ingest", "json", str(rows), "--collection", "jobs", "--public", "--no-index").returncode == 0
    rows.write_text("id,title,team\n1,a,x\n")
    again = _cli(
        tmp_path,
        "ingest",
        "json",
        str(rows),
        "--collection",
        "jobs",
        "--public",
        "--no-index",
        "--noun",
        "batch job",
        "--prune",
    )
    assert again.returncode == 0, again.stderr
    store = open_store(_embedded(tmp_path))
    assert store.kinds("acme").get("jobs").noun == "batch job"
    assert [d["ref"] for d in store.collection("jobs").find({"tenant_id": "acme"})] == ["jobs/1"]


def test_ingest_mongodb_copies_a_collection_of_the_teams_server(tmp_path, capsys):
    from datetime import datetime

    from context_engine.cli import main
    from context_engine.store.documents import mongodb_client

    source = mongodb_client("mongomock://team-ops")["ops"]["oncall"]
    source.delete_many({})
    source.insert_many(
        [
            {"team": "payments", "who": "priyar", "started": datetime(2026, 3, 1)},
            {"team": "web", "who": "mgarcia", "started": datetime(2026, 3, 8)},
        ]
    )
    before = list(source.find())
    code = main(
        [
            "ingest",
            "mongodb",
            "mongomock://team-ops",
            "--db",
            "ops",
            "--source-collection",
            "oncall",
            "--collection",
            "shifts",
            "--filter",
            '{"team": "payments"}',
            "--public",
            "--no-index",
            "--data-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    assert "shifts: key: id (inferred)" in capsys.readouterr().out
    assert list(source.find()) == before  # the source is only read
    store = open_store(_embedded(tmp_path))
    (shift,) = store.collection("shifts").find({"tenant_id": "acme"})
    assert shift["ref"] == str(before[0]["_id"]) and shift["started"] == datetime(2026, 3, 1)
    assert (
        main(["ingest", "mongodb", "mongomock://team-ops", "--collection", "shifts", "--data-dir", str(tmp_path)]) == 2
    )
    assert "needs --db" in capsys.readouterr().err


def _ask(data_dir, question, *asker):
    out = _cli(data_dir, "ask", question, "--json", "--now", "2026-11-30T12:00:00Z", *asker)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _refs(answer):
    return {r.get("ref") for r in answer.get("records", [])}


def test_ask_lists_and_counts_own_records_within_the_askers_access(own_dir):
    data_dir, *_ = own_dir
    outsider = _ask(data_dir, "list the sev1 incidents", "--as", OUTSIDER)
    member = _ask(data_dir, "list the sev1 incidents", "--as", MEMBER)
    assert outsider["queries"][0]["collection"] == "incidents"
    assert _refs(outsider) and PRIVATE not in _refs(outsider) and "Card numbers" not in outsider["answer"]
    assert _refs(member) == _refs(outsider) | {PRIVATE}
    assert "23 incidents" in _ask(data_dir, "how many incidents are there", "--as", OUTSIDER)["answer"]
    assert "24 incidents" in _ask(data_dir, "how many incidents are there", "--as", MEMBER)["answer"]
    assert "3 deploys" in _ask(data_dir, "how many deploys failed")["answer"]


def _incidents():
    return json.loads(INCIDENTS_JSON.read_text())


def _deploys():
    import csv

    return list(csv.DictReader(DEPLOYS_CSV.open()))


def _prs(data_dir, match, *asker):
    out = _cli(data_dir, "query", "pull_requests", json.dumps([{"$match": match}, {"$project": {"ref": 1}}]), *asker)
    assert out.returncode == 0, out.stderr
    return {r["ref"] for r in json.loads(out.stdout)["records"]}


def _readable(incident, asker):
    return not incident.get("visible_to") or f"github:{asker}" in incident["visible_to"]


@pytest.mark.parametrize("asker", [MEMBER, OUTSIDER])
def test_a_question_joining_incidents_to_their_prs_answers_within_access(own_dir, asker):
    data_dir, *_ = own_dir
    reviewed = _prs(data_dir, {"reviews.user.login": "noral"}, "--as", asker)  # noral reviewed the private one's PR
    expected = {f"incidents/{i['id']}" for i in _incidents() if i.get("pr") in reviewed and _readable(i, asker)}
    answer = _ask(data_dir, "incidents whose fix PR was reviewed by noral", "--as", asker)
    assert answer["queries"][0]["collection"] == "incidents" and "$lookup" in json.dumps(answer["queries"])
    assert _refs(answer) == expected
    assert (PRIVATE in _refs(answer)) == (asker == MEMBER)  # the only one: nothing for an outsider
    assert "did not understand" not in answer["answer"]


def test_a_deploy_question_joins_the_prs_it_shipped(own_dir):
    data_dir, *_ = own_dir
    merged_by = _prs(data_dir, {"merged_by.login": "larsn"})
    expected = {d["deploy_id"] for d in _deploys() if d["pr"] in merged_by}
    answer = _ask(data_dir, "deploys of PRs merged by larsn")
    assert expected and _refs(answer) == expected


def test_own_people_fields_are_read_by_the_words_that_name_them(own_dir):
    data_dir, *_ = own_dir
    commanded = {f"incidents/{i['id']}" for i in _incidents() if i["commander"] == "priyar" and _readable(i, OUTSIDER)}
    reported = {f"incidents/{i['id']}" for i in _incidents() if i["reporter"] == "priyar" and _readable(i, OUTSIDER)}
    assert commanded != reported  # the fixture tells the two fields apart
    assert _refs(_ask(data_dir, "incidents commanded by priyar", "--as", OUTSIDER)) == commanded
    assert _refs(_ask(data_dir, "which incidents did priyar command?", "--as", OUTSIDER)) == commanded
    assert _refs(_ask(data_dir, "incidents reported by priyar", "--as", OUTSIDER)) == reported
    deployed = {d["deploy_id"] for d in _deploys() if d["deployed_by"] == "larsn"}
    assert _refs(_ask(data_dir, "deploys by larsn")) == deployed


def test_a_people_field_said_as_its_verb_is_negated(own_dir):
    data_dir, *_ = own_dir
    readable = [i for i in _incidents() if _readable(i, OUTSIDER)]
    others = {f"incidents/{i['id']}" for i in readable if i["commander"] != "priyar"}
    assert 0 < len(others) < len(readable)
    assert _refs(_ask(data_dir, "incidents not commanded by priyar", "--as", OUTSIDER)) == others


def test_top_n_time_and_grouping_over_own_collections(own_dir):
    from collections import Counter

    data_dir, *_ = own_dir
    slowest = sorted(_deploys(), key=lambda d: -int(d["duration_seconds"]))[:3]
    answer = _ask(data_dir, "top 3 deploys by duration_seconds")
    assert [r["ref"] for r in answer["records"]] == [d["deploy_id"] for d in slowest]
    in_2025 = [i for i in _incidents() if i["opened_at"].startswith("2025") and _readable(i, OUTSIDER)]
    assert (
        f"{len(in_2025)} incidents"
        in _ask(data_dir, "how many incidents were opened in 2025?", "--as", OUTSIDER)["answer"]
    )
    per_service = Counter(i["service"] for i in _incidents() if _readable(i, OUTSIDER))
    grouped = _ask(data_dir, "which service had the most incidents?", "--as", OUTSIDER)
    top, n = per_service.most_common(1)[0]
    assert f"{top}: {n}" in grouped["answer"] and "did not understand" not in grouped["answer"]


def test_open_is_not_taken_for_granted_on_an_own_kind(own_dir):
    data_dir, *_ = own_dir
    answer = _ask(data_dir, "show open incidents on payments-api", "--as", OUTSIDER)
    assert "I did not understand: 'open'" in answer["answer"]


def test_who_did_the_most_reads_the_people_field_the_verb_names(own_dir):
    from collections import Counter

    data_dir, *_ = own_dir
    commanders = Counter(i["commander"] for i in _incidents() if _readable(i, OUTSIDER))
    reporters = Counter(i["reporter"] for i in _incidents() if _readable(i, OUTSIDER))
    answer = _ask(data_dir, "who commanded the most incidents?", "--as", OUTSIDER)
    assert answer["queries"][0]["collection"] == "incidents" and '"$commander"' in json.dumps(answer["queries"])
    assert commanders != reporters and "did not understand" not in answer["answer"]
    deployers = Counter(d["deployed_by"] for d in _deploys())
    answer = _ask(data_dir, "who deployed the most?")  # no record noun: the verb names the deploys' people field
    login, n = deployers.most_common(1)[0]
    assert answer["queries"][0]["collection"] == "deploys" and f"({login}): {n}" in answer["answer"]


def test_a_list_shows_the_fields_the_question_names(own_dir):
    data_dir, *_ = own_dir
    answer = _ask(data_dir, "show the title and service of sev1 incidents", "--as", OUTSIDER)
    sev1 = [i for i in _incidents() if i["severity"] == "sev1" and _readable(i, OUTSIDER)]
    assert sorted((r["title"], r["service"]) for r in answer["records"]) == sorted(
        (i["title"], i["service"]) for i in sev1
    )
    assert all(set(r) <= {"title", "service", "ref"} for r in answer["records"])
    counted = _ask(data_dir, "how many sev1 incidents have a title", "--as", OUTSIDER)  # a count shows no fields:
    assert "$project" not in json.dumps(counted["queries"])  # the word is not read as one

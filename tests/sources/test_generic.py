"""Reading a team's own files and MongoDB collections into records (`sources.generic`): formats, the
input rules, keys, dropped fields, access and spec inference."""

import json
import os
from datetime import datetime

import mongomock
import pytest

from context_engine.kinds import SpecError
from context_engine.sources.generic import OwnOptions, read_files, read_mongodb, spec_file_options
from context_engine.sources.problems import ReadProblems, SourceError

LOGINS = {"priyar", "larsn", "mgarcia"}
ROWS = [
    {
        "id": 1,
        "title": "Checkout down",
        "severity": "sev1",
        "commander": "priyar",
        "opened_at": "2026-03-01T10:00:00Z",
        "summary": "Card payments failed for twenty minutes after a config push",
        "pr": "acme/web#12",
    },
    {
        "id": 2,
        "title": "Slow search",
        "severity": "sev3",
        "commander": "larsn",
        "opened_at": "2026-03-04T08:30:00Z",
        "summary": "Search latency doubled while an index was rebuilt in the background",
        "pr": "acme/web#13",
    },
    {
        "id": 3,
        "title": "Login loop",
        "severity": "sev2",
        "commander": "priyar",
        "opened_at": "2026-03-09",
        "summary": "Some users were sent back to the login page after signing in",
        "pr": "acme/web#14",
    },
]


def _read(tmp_path, name, text, **options):
    path = tmp_path / name
    path.write_text(text)
    problems = ReadProblems()
    read = read_files([path], OwnOptions("incidents", public=True, **options), LOGINS, problems)
    return read, problems


def _csv(rows):
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return "\n".join([",".join(columns), *(",".join(str(r.get(c, "")) for c in columns) for r in rows)]) + "\n"


@pytest.mark.parametrize(
    "name, text",
    [
        ("incidents.json", json.dumps(ROWS)),
        ("incidents.json", json.dumps({"meta": {"page": 1}, "incidents": ROWS})),
        ("incidents.jsonl", "\n".join(json.dumps(r) for r in ROWS)),
        ("incidents.csv", _csv(ROWS)),
    ],
)
def test_every_format_gives_the_same_records(tmp_path, name, text):
    read, problems = _read(tmp_path, name, text)
    assert problems.count == 0
    assert [r["ref"] for r in read.records] == ["incidents/1", "incidents/2", "incidents/3"]
    first = read.records[0]
    assert first["id"] == 1 and first["severity"] == "sev1" and first["source"] == "files"
    assert first["opened_at"] == datetime(2026, 3, 1, 10, 0)  # a time field is a date, whatever its text
    assert read.records[2]["opened_at"] == datetime(2026, 3, 9)  # a plain date too


def test_csv_cells_are_typed_and_empty_cells_missing(tmp_path):
    read, _ = _read(tmp_path, "d.csv", "id,minutes,ratio,code,note,when\n1,12,0.5,007,,2026-01-02T03:04:05Z\n")
    (record,) = read.records
    assert record["minutes"] == 12 and record["ratio"] == 0.5 and record["code"] == "007"  # a leading zero is text
    assert "note" not in record and record["when"] == datetime(2026, 1, 2, 3, 4, 5)


def test_the_spec_is_inferred_and_each_choice_said(tmp_path):
    read, _ = _read(tmp_path, "incidents.json", json.dumps(ROWS))
    spec = read.spec
    assert (spec.name, spec.noun, spec.key, spec.ref_prefix) == ("incidents", "incident", "id", "incidents/")
    assert spec.times == {"created": ("opened_at",)}
    assert spec.people["assignee"][0].path == "commander" and spec.people["assignee"][0].handle == "github"
    assert spec.text == ("title", "summary") and spec.values == {"severity": ("severity",)}
    assert spec.references == {"pr": "pull_requests"}
    assert "key: id (inferred)" in read.inferred and "time created: opened_at (inferred)" in read.inferred
    assert "access: the whole tenant (--public)" in read.inferred


def test_given_options_win_over_inference(tmp_path):
    read, _ = _read(
        tmp_path,
        "incidents.json",
        json.dumps(ROWS),
        key="title",
        ref_prefix="INC-",
        noun="outage",
        times={"reported": "opened_at"},
        people={"lead": ("commander", "github")},
    )
    spec = read.spec
    assert (spec.key, spec.noun, read.records[0]["ref"]) == ("title", "outage", "INC-Checkout down")
    assert spec.times == {"reported": ("opened_at",)} and set(spec.people) == {"lead"}
    assert "key: title (given)" in read.inferred


def test_a_people_column_needs_logins_of_the_directory(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(ROWS))
    read = read_files([path], OwnOptions("incidents", public=True), set(), ReadProblems())
    assert read.spec.people == {}  # "priyar" is nobody this tenant knows: not guessed a person


def test_missing_and_duplicate_keys_are_row_problems(tmp_path):
    rows = [{"id": 1, "t": "a"}, {"t": "no key"}, {"id": 1, "t": "again"}, {"id": 2, "t": "b"}]
    read, problems = _read(tmp_path, "x.json", json.dumps(rows), key="id")
    assert [r["ref"] for r in read.records] == ["incidents/1", "incidents/2"]
    assert problems.count == 2
    assert any("no key" in d for d in problems.details) and any("duplicate key" in d for d in problems.details)


def test_no_key_to_infer_is_one_line(tmp_path):
    with pytest.raises(SourceError, match="give --key"):
        _read(tmp_path, "x.json", json.dumps([{"t": "a"}, {"t": "a"}]))


def test_the_engines_fields_and_unstorable_keys_are_dropped_and_said(tmp_path):
    rows = [
        {
            "id": 1,
            "_id": "x",
            "tenant_id": "globex",
            "acl": ["*"],
            "source": "github",
            "acl_partial": True,
            "$where": "1",
            "a.b": 2,
            "nested": {"acl": ["*"], "$gt": 1, "ok": 3},
            "title": "t",
        }
    ]
    read, _ = _read(tmp_path, "x.json", json.dumps(rows), key="id")
    (record,) = read.records
    assert record == {"id": 1, "nested": {"ok": 3}, "title": "t", "ref": "incidents/1", "source": "files"}
    dropped = " ".join(read.warnings)
    for key in ("_id", "tenant_id", "acl", "$where", "a.b", "$gt"):
        assert f"'{key}'" in dropped


def test_access_comes_from_the_access_field_as_principals(tmp_path):
    rows = [{"id": 1, "who": ["github:priyar", "email:Dana@Acme.io"]}, {"id": 2, "who": "*"}, {"id": 3}]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(rows))
    private = read_files([path], OwnOptions("incidents", access_field="who"), LOGINS, ReadProblems())
    assert [r["acl"] for r in private.records] == [["email:dana@acme.io", "github:priyar"], ["*"], []]
    assert all("who" not in r for r in private.records)  # the access list is hidden; the field goes with it
    assert any("readable by nobody" in w for w in private.warnings)
    public = read_files([path], OwnOptions("incidents", access_field="who", public=True), LOGINS, ReadProblems())
    assert public.records[2]["acl"] == ["*"]  # naming nobody, with --public: the whole tenant


@pytest.mark.parametrize(
    "value", ["priyar", "GitHub:priyar", "github:", "okta:dana", ["github:a", "dana"], {"$ne": 1}, 7]
)
def test_an_access_value_without_its_system_is_refused(tmp_path, value):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"id": 1, "who": value}]))
    with pytest.raises(SourceError, match="'who'"):
        read_files([path], OwnOptions("incidents", access_field="who"), LOGINS, ReadProblems())


def test_without_access_nobody_can_read_and_it_is_said(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"id": 1}]))
    read = read_files([path], OwnOptions("incidents"), LOGINS, ReadProblems())
    assert "acl" not in read.records[0]  # ingest then stores nobody (deny by default)
    assert any("nobody can read" in w for w in read.warnings)


@pytest.mark.parametrize("name", ["pull_requests", "people", "collection_kinds", "store_meta", "a.b", "$x", "1st", ""])
def test_a_builtin_reserved_or_malformed_name_is_refused(name):
    with pytest.raises(SpecError):
        OwnOptions(name)


def test_a_folder_is_read_and_a_symlink_out_and_a_fifo_refused(tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps([{"id": 99, "t": "outside"}]))
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps(ROWS[:1]))
    (folder / "sub" / "b.csv").write_text(_csv(ROWS[1:2]))
    (folder / "c.jsonl").write_text(json.dumps(ROWS[2]))
    (folder / "notes.txt").write_text("not rows")
    (folder / "link.json").symlink_to(outside)
    os.mkfifo(folder / "pipe.json")
    problems = ReadProblems()
    read = read_files([folder], OwnOptions("incidents", public=True), LOGINS, problems)
    assert sorted(r["id"] for r in read.records) == [1, 2, 3]
    assert sorted(problems.refused) == ["link.json (symlink)", "pipe.json (fifo)"]


def test_unreadable_input_is_one_line(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        read_files([tmp_path / "nope.json"], OwnOptions("incidents"), LOGINS, ReadProblems())
    (tmp_path / "x.txt").write_text("[]")
    with pytest.raises(SourceError, match=r"not a \.json"):
        read_files([tmp_path / "x.txt"], OwnOptions("incidents"), LOGINS, ReadProblems())
    (tmp_path / "empty.json").write_text("[]")
    with pytest.raises(SourceError, match="no rows"):
        read_files([tmp_path / "empty.json"], OwnOptions("incidents"), LOGINS, ReadProblems())


def test_a_broken_file_is_a_problem_of_that_file(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.json").write_text(json.dumps(ROWS))
    (tmp_path / "in" / "bad.json").write_text("{not json")
    (tmp_path / "in" / "bad.csv").write_bytes(b"id,t\n1,\xff\n")
    problems = ReadProblems()
    read = read_files([tmp_path / "in"], OwnOptions("incidents", public=True), LOGINS, problems)
    assert len(read.records) == 3 and problems.count == 2


def test_a_spec_file_is_the_whole_spec(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(
        json.dumps(
            {
                "noun": "incident",
                "key": "id",
                "ref_prefix": "INC-",
                "text": ["title"],
                "people": {"commander": [{"path": "commander", "handle": "github"}]},
                "access_field": "who",
            }
        )
    )
    options = spec_file_options(path, "incidents", None, False)
    assert options.access_field == "who" and options.spec.people["commander"][0].path == "commander"
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS))
    read = read_files([rows], options, LOGINS, ReadProblems())
    assert read.spec == options.spec and read.records[0]["ref"] == "INC-1"
    path.write_text(json.dumps({"name": "deploys", "noun": "x", "key": "id"}))
    with pytest.raises(SourceError, match="names collection 'deploys'"):
        spec_file_options(path, "incidents", None, False)
    path.write_text(json.dumps({"noun": "x", "key": "_id"}))
    with pytest.raises(SourceError, match="not a field path"):
        spec_file_options(path, "incidents", None, False)


class _ReadOnly:
    """A MongoDB collection that fails the test on any write: the source is only ever read."""

    def __init__(self, collection):
        self._collection = collection

    def find(self, *args, **kwargs):
        return self._collection.find(*args, **kwargs)

    def __getattr__(self, name):
        raise AssertionError(f"the source was touched: {name}")


def test_mongodb_is_copied_read_only_with_its_id_as_the_key():
    client = mongomock.MongoClient(tz_aware=False)
    source = client["ops"]["oncall"]
    source.insert_many(
        [
            {"team": "payments", "who": "priyar", "started": datetime(2026, 3, 1)},
            {"team": "web", "who": "mgarcia", "started": datetime(2026, 3, 8)},
            {"team": "payments", "who": "larsn", "started": datetime(2026, 3, 15)},
        ]
    )
    before = list(source.find())
    read_only = {"ops": {"oncall": _ReadOnly(source)}}
    problems = ReadProblems()
    read = read_mongodb(
        read_only,
        "ops",
        "oncall",
        OwnOptions("shifts", public=True),
        LOGINS,
        problems,
        query={"team": "payments"},
        limit=5,
    )
    assert list(source.find()) == before
    assert read.spec.key == "id" and {r["ref"] for r in read.records} == {
        str(d["_id"]) for d in before if d["team"] == "payments"
    }
    assert all("_id" not in r and r["source"] == "mongodb:ops.oncall" for r in read.records)
    assert read.spec.times == {"created": ("started",)}
    limited = read_mongodb(read_only, "ops", "oncall", OwnOptions("shifts", public=True), LOGINS, problems, limit=1)
    assert len(limited.records) == 1
    with pytest.raises(SourceError, match="no documents match --filter"):
        read_mongodb(read_only, "ops", "oncall", OwnOptions("shifts"), LOGINS, problems, query={"team": "none"})


def test_a_file_with_no_rows_says_why(tmp_path):
    (tmp_path / "broken.json").write_text('[{"id": 1,')
    with pytest.raises(SourceError, match=r"no rows found in .*broken\.json \(.*broken\.json: malformed JSON"):
        read_files([tmp_path / "broken.json"], OwnOptions("incidents", public=True), LOGINS, ReadProblems())


def test_name_paths_are_fields_of_short_strings_nested_ones_too():
    from context_engine.sources.generic import name_paths

    rows = [
        {
            "id": 1,
            "city": "Oslo",
            "manager": {"full_name": "Jerry Prince"},
            "notes": "a long free text that says a great deal more than any name would say",
            "score": 3,
            "mixed": 7,
            "orders": [{"status": "Shipped", "qty": 2}, {"status": "On Road", "qty": 1}],
        },
        {"id": 2, "city": "Suite 634", "manager": {"full_name": "Ann Lee"}, "notes": "short", "mixed": "x"},
    ]
    # names (however many distinct) and statuses of embedded rows; not numbers, long text, or a field
    # whose values are mostly not strings
    assert sorted(name_paths(rows)) == ["city", "manager.full_name", "orders.status"]


def test_every_field_of_short_names_is_a_value_field_nested_ones_too_but_not_the_subject(tmp_path):
    rows = [
        {"id": i, "title": title, "customer": {"name": who, "city": city}, "plan": plan}
        for i, (title, who, city, plan) in enumerate(
            [
                ("Refund", "Jerry Prince", "Oslo", "gold"),
                ("Login", "Ana Ruiz", "Lima", "free"),
                ("Export", "Wen Li", "Oslo", "gold"),
            ]
        )
    ]
    read, _ = _read(tmp_path, "tickets.json", json.dumps(rows))
    # A person's name is unique per row and still a value a question may say ("Jerry Prince's tickets").
    assert read.spec.values == {
        "customer.name": ("customer.name",),
        "customer.city": ("customer.city",),
        "plan": ("plan",),
    }
    assert "value customer.name: customer.name (inferred)" in read.inferred
    assert "title" not in read.spec.values  # the subject's words are a topic, not one exact value

"""`$lookup` that stays in scope: a join between a tenant's own collections validates against their
schemas and runs with the tenant and access filter injected into the joined side, its hidden fields
stripped and its fan-out capped; every way of reaching past that is refused. And the join itself
has MongoDB's semantics on the embedded store, in both forms."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import mongomock
import pytest

from context_engine.config import HIDDEN_FIELDS, Settings
from context_engine.query.execute import MAX_JOINED, ExecutionError, run_pipeline
from context_engine.query.schema import schema_from_documents
from context_engine.query.validate import validate_pipeline
from context_engine.store.bounded import Cancelled, Stop, stop_on
from context_engine.store.documents import open_store

MEMBER, OUTSIDER = ["github:priya"], ["github:zed"]


def _pr(tenant: str, number: int, acl: list[str], reviewer: str, title: str) -> dict:
    return {
        "tenant_id": tenant,
        "acl": acl,
        "ref": f"acme/api#{number}",
        "number": number,
        "title": title,
        "reviews": [{"user": {"login": reviewer}}],
        "labels": [{"name": "bug"}],
    }


def _issue(tenant: str, number: int, fixed_by: object, acl: list[str] | None = None) -> dict:
    issue = {
        "tenant_id": tenant,
        "acl": acl or ["*"],
        "ref": f"acme/api#i{number}",
        "number": number,
        "title": f"issue {number}",
    }
    if fixed_by is not None:
        issue["fixed_by"] = fixed_by
    return issue


PRS = [
    _pr("acme", 1, ["*"], "priya", "fix the cache"),
    _pr("acme", 2, ["github:priya"], "priya", "secret fix"),
    _pr("acme", 3, ["*"], "omar", "fix the docs"),
    _pr("globex", 4, ["*"], "priya", "globex fix"),
]
ISSUES = [
    _issue("acme", 10, "acme/api#1"),
    _issue("acme", 11, "acme/api#2"),
    _issue("acme", 12, "acme/api#4"),
    _issue("acme", 13, ["acme/api#1", "acme/api#3"]),
    _issue("acme", 14, None),
]
SCHEMAS = {
    "pull_requests": schema_from_documents("pull_requests", PRS[:1]),
    "issues": schema_from_documents("issues", ISSUES),
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A committed embedded store: acme's and globex's records, private ones among them."""
    data = tmp_path_factory.mktemp("lookup")
    store = open_store(Settings(data_dir=data, mongodb_uri=None))
    for tenant in ("acme", "globex"):
        store.upsert(
            "pull_requests",
            tenant,
            [{k: v for k, v in pr.items() if k != "tenant_id"} for pr in PRS if pr["tenant_id"] == tenant],
        )
        store.upsert(
            "issues",
            tenant,
            [{k: v for k, v in i.items() if k != "tenant_id"} for i in ISSUES if i["tenant_id"] == tenant],
        )
    store.commit()
    return data


def _fresh(data_dir: Path):
    """A store as a new process opens it: no collection read yet (the join must load its own)."""
    return open_store(Settings(data_dir=data_dir, mongodb_uri=None))


def _run(store, collection: str, pipeline: list, principals: list[str], schemas=SCHEMAS, **caps) -> list[dict]:
    assert validate_pipeline(pipeline, schemas[collection], schemas=schemas) == []
    return run_pipeline(
        store, collection, pipeline, tenant="acme", principals=principals, schema=schemas[collection], **caps
    )


FIXED_BY = [
    {"$lookup": {"from": "pull_requests", "localField": "fixed_by", "foreignField": "ref", "as": "fix"}},
    {"$project": {"number": 1, "titles": "$fix.title", "_id": 0}},
    {"$sort": {"number": 1}},
]
FIXED_BY_LET = [
    {
        "$lookup": {
            "from": "pull_requests",
            "let": {"fix": "$fixed_by"},
            "pipeline": [{"$match": {"$expr": {"$eq": ["$ref", "$$fix"]}}}],
            "as": "fix",
        }
    },
    {"$project": {"number": 1, "titles": "$fix.title", "_id": 0}},
    {"$sort": {"number": 1}},
]


@pytest.mark.parametrize("pipeline", [FIXED_BY, FIXED_BY_LET], ids=["localField", "let"])
def test_a_join_reads_only_the_askers_tenant_and_what_the_asker_may_read(data_dir, pipeline):
    outsider = _run(_fresh(data_dir), "issues", pipeline, OUTSIDER)
    member = _run(_fresh(data_dir), "issues", pipeline, MEMBER)
    # #12 names globex's PR #4: another tenant's record is never joined, whoever asks.
    # #11 names the private PR #2: joined for its reviewer, never for the outsider.
    assert {r["number"]: r["titles"] for r in outsider}[12] == [] == {r["number"]: r["titles"] for r in member}[12]
    assert {r["number"]: r["titles"] for r in outsider}[11] == []
    assert {r["number"]: r["titles"] for r in member}[11] == ["secret fix"]
    assert {r["number"]: r["titles"] for r in outsider}[10] == ["fix the cache"]  # the join does work


def test_joined_documents_never_carry_id_tenant_or_acl(data_dir):
    rows = _run(
        _fresh(data_dir),
        "issues",
        [{"$lookup": {"from": "pull_requests", "localField": "fixed_by", "foreignField": "ref", "as": "fix"}}],
        MEMBER,
    )
    joined = [doc for row in rows for doc in row["fix"]]
    assert joined and not any(HIDDEN_FIELDS & set(doc) for doc in joined)
    # Inside the pipeline too, not only in the result: two joined records alike but for their hidden
    # fields group as one key (they would be two if `_id` or `acl` were still in them).
    twins = [_pr("acme", 1, ["*"], "priya", "same"), _pr("acme", 1, ["github:priya"], "priya", "same")]
    db = mongomock.MongoClient().db
    db.pull_requests.insert_many([{**twins[0], "_id": "a"}, {**twins[1], "_id": "b"}])
    db.issues.insert_one({**_issue("acme", 1, "acme/api#1"), "_id": "i"})
    store = SimpleNamespace(embedded=True, revision=1, collection=lambda name: db[name])
    grouped = _run(
        store,
        "issues",
        [
            {"$lookup": {"from": "pull_requests", "localField": "fixed_by", "foreignField": "ref", "as": "fix"}},
            {"$unwind": "$fix"},
            {"$group": {"_id": "$fix", "n": {"$sum": 1}}},
        ],
        MEMBER,
    )
    assert [g["n"] for g in grouped] == [2]


@pytest.mark.parametrize(
    "target",
    ["store_meta", "collection_kinds", "index_vectors", "system.users", "messages", "../pull_requests", None, 7],
)
def test_a_join_into_an_engine_unknown_or_unreadable_collection_is_refused(target):
    schemas = {**SCHEMAS, "store_meta": SCHEMAS["pull_requests"]}  # even were it handed over as readable
    [error] = validate_pipeline(
        [{"$lookup": {"from": target, "localField": "fixed_by", "foreignField": "ref", "as": "x"}}],
        SCHEMAS["issues"],
        schemas=schemas,
    )
    assert error == (
        f"Stage 1 ($lookup): $lookup from {target!r} is not allowed; join one of the collections "
        "you can read: issues, pull_requests"
    )


def test_without_the_tenants_schemas_there_is_no_join():
    [error] = validate_pipeline(FIXED_BY[:1], SCHEMAS["issues"])
    assert error.startswith("Stage $lookup is not allowed; use only $match")


JOIN = {"from": "pull_requests", "localField": "fixed_by", "foreignField": "ref", "as": "fix"}
SUB = {"from": "pull_requests", "let": {"fix": "$fixed_by"}, "as": "fix"}
REFUSED = {
    "as acl": ([{"$lookup": {**JOIN, "as": "acl"}}], "Field 'acl' uses the hidden field 'acl'"),
    "as tenant_id": ([{"$lookup": {**JOIN, "as": "tenant_id"}}], "uses the hidden field 'tenant_id'"),
    "as _id": ([{"$lookup": {**JOIN, "as": "_id"}}], "uses the hidden field '_id'"),
    "as $x": ([{"$lookup": {**JOIN, "as": "$x"}}], "invalid $lookup as '$x'"),
    "as dotted": ([{"$lookup": {**JOIN, "as": "a.acl"}}], "uses the hidden field 'acl'"),
    "as an existing field": ([{"$lookup": {**JOIN, "as": "title"}}], "$lookup as 'title' is already a field"),
    "no as": ([{"$lookup": {k: v for k, v in JOIN.items() if k != "as"}}], '$lookup needs "as"'),
    "localField acl": ([{"$lookup": {**JOIN, "localField": "acl"}}], "Field 'acl' uses the hidden field"),
    "foreignField tenant_id": ([{"$lookup": {**JOIN, "foreignField": "tenant_id"}}], "hidden field 'tenant_id'"),
    "foreignField _id": ([{"$lookup": {**JOIN, "foreignField": "_id"}}], "hidden field '_id'"),
    "foreignField unknown": (
        [{"$lookup": {**JOIN, "foreignField": "reff"}}],
        "Field 'reff' does not exist in pull_requests; did you mean 'ref'?",
    ),
    "localField alone": (
        [{"$lookup": {k: v for k, v in JOIN.items() if k != "foreignField"}}],
        "needs localField and foreignField together",
    ),
    "let reads acl": ([{"$lookup": {**SUB, "let": {"a": "$acl"}, "pipeline": []}}], "hidden field 'acl'"),
    "let named ROOT": (
        [{"$lookup": {**SUB, "let": {"ROOT": "$title"}, "pipeline": []}}],
        "let variable 'ROOT' must begin with a lower-case letter",
    ),
    "sub-pipeline matches acl": (
        [{"$lookup": {**SUB, "pipeline": [{"$match": {"acl": "*"}}]}}],
        "its pipeline's stage 1 ($match): Field 'acl' uses the hidden field",
    ),
    "sub-pipeline matches tenant_id": (
        [{"$lookup": {**SUB, "pipeline": [{"$match": {"tenant_id": "globex"}}]}}],
        "Field 'tenant_id' uses the hidden field",
    ),
    "sub-pipeline $expr on tenant_id": (
        [{"$lookup": {**SUB, "pipeline": [{"$match": {"$expr": {"$ne": ["$tenant_id", "$$fix"]}}}]}}],
        "Field 'tenant_id' uses the hidden field",
    ),
    "sub-pipeline $$ROOT": (
        [{"$lookup": {**SUB, "pipeline": [{"$project": {"all": "$$ROOT"}}]}}],
        "variable '$$ROOT' is not defined; a $lookup pipeline may read only its let variables",
    ),
    "undefined variable": (
        [{"$lookup": {**SUB, "pipeline": [{"$match": {"$expr": {"$eq": ["$ref", "$$other"]}}}]}}],
        "variable '$$other' is not defined",
    ),
    "let variable outside its join": (
        [{"$lookup": {**SUB, "pipeline": []}}, {"$match": {"$expr": {"$eq": ["$title", "$$fix"]}}}],
        "variable '$$fix' is not allowed",
    ),
    "let variable reaching acl": (
        [{"$lookup": {**SUB, "pipeline": [{"$project": {"x": "$$fix.acl"}}]}}],
        "uses the hidden field 'acl'",
    ),
    "nested join": (
        [{"$lookup": {**SUB, "pipeline": [{"$lookup": JOIN}]}}],
        "a $lookup inside a $lookup's pipeline is not allowed: one level of join is enough",
    ),
    "$text in the joined side": (
        [{"$lookup": {**SUB, "pipeline": [{"$match": {"$text": {"$search": "x"}}}]}}],
        "$text is only allowed at the top level of the first $match stage",
    ),
    "joined _id read after": ([{"$lookup": JOIN}, {"$project": {"ids": "$fix._id"}}], "hidden field '_id'"),
    "joined acl matched after": ([{"$lookup": JOIN}, {"$match": {"fix.acl": "*"}}], "hidden field 'acl'"),
    "three joins": (
        [{"$lookup": {**JOIN, "as": f"f{i}"}} for i in range(3)],
        "at most 2 $lookup stages are allowed in a pipeline",
    ),
    "unwinds past the cap": (
        [{"$lookup": JOIN}, {"$unwind": "$fix"}, {"$unwind": "$fix.reviews"}, {"$unwind": "$fix.labels"}],
        "at most 2 $unwind stages are allowed",
    ),
    "unknown option": ([{"$lookup": {**JOIN, "into": "x"}}], "$lookup option(s) into not allowed"),
    "stages past the cap": (
        [{"$lookup": {**SUB, "pipeline": [{"$limit": 1}] * 12}}],
        "The pipeline has 13 stages (its $lookup pipelines included); at most 12",
    ),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_every_way_past_the_joined_scope_is_refused_in_one_sentence(name):
    pipeline, expected = REFUSED[name]
    errors = validate_pipeline(pipeline, SCHEMAS["issues"], schemas=SCHEMAS)
    assert any(expected in error for error in errors), errors
    assert all("\n" not in error for error in errors)


def _fanned_out(tmp_path: Path, foreign: int, rows: int):
    """`rows` issues each naming a PR ref that `foreign` PRs share: a join of `foreign` documents per row."""
    store = open_store(Settings(data_dir=tmp_path, mongodb_uri=None))
    store.upsert(
        "pull_requests",
        "acme",
        [{**_pr("acme", n, ["*"], "priya", "x" * 200), "ref": f"p{n}", "fixes": "shared"} for n in range(foreign)],
    )
    store.upsert("issues", "acme", [{**_issue("acme", n, "shared"), "tenant_id": None} for n in range(rows)])
    schemas = {**SCHEMAS, "pull_requests": schema_from_documents("pull_requests", [{"fixes": "shared", **PRS[0]}])}
    return store, schemas


FAN_OUT = [{"$lookup": {"from": "pull_requests", "localField": "fixed_by", "foreignField": "fixes", "as": "fix"}}]


def test_a_join_matching_ten_thousand_documents_a_row_is_capped_and_fast(tmp_path):
    store, schemas = _fanned_out(tmp_path, foreign=10_000, rows=50)
    started = time.perf_counter()
    rows = _run(store, "issues", FAN_OUT, MEMBER, schemas)
    assert len(rows) == 50 and {len(row["fix"]) for row in rows} == {MAX_JOINED}
    assert time.perf_counter() - started < 3
    # More than the byte cap holds: the existing one-line cap error, not memory without end.
    started = time.perf_counter()
    with pytest.raises(ExecutionError, match=r"^the query produced more than 1 MB \(in a \$lookup\)"):
        _run(store, "issues", FAN_OUT, MEMBER, schemas, max_bytes=2**20)
    assert time.perf_counter() - started < 3


def test_the_documents_a_join_copies_are_capped_in_all(tmp_path):
    store, schemas = _fanned_out(tmp_path, foreign=200, rows=51)  # 51 rows x 100 joined > 5,000
    started = time.perf_counter()
    with pytest.raises(ExecutionError, match=r"^the \$lookup joined more than 5000 documents in all; narrow it"):
        _run(store, "issues", FAN_OUT, MEMBER, schemas)
    assert time.perf_counter() - started < 2


def test_the_deadline_and_the_stop_flag_stop_a_slow_join(tmp_path):
    store, schemas = _fanned_out(tmp_path, foreign=3_000, rows=200)
    slow = [
        {
            "$lookup": {
                "from": "pull_requests",
                "let": {"fix": "$fixed_by"},
                "as": "fix",
                "pipeline": [
                    {
                        "$match": {
                            "$expr": {"$eq": [{"$concat": ["$fixes", "$title"]}, {"$concat": ["$$fix", "$title"]}]}
                        }
                    },
                    {"$count": "n"},
                ],
            }
        }
    ]  # 600k expressions: minutes in mongomock
    # Stopped means seconds, not minutes: ~0.2 s alone; a full suite's garbage collection once took 1.9 s.
    stopped_within = 10.0
    started = time.perf_counter()
    with pytest.raises(ExecutionError, match=r"^the query ran past its 200 ms deadline"):
        _run(store, "issues", slow, MEMBER, schemas, max_time_ms=200)
    assert time.perf_counter() - started < stopped_within
    stop = Stop()
    threading.Timer(0.2, stop.cancel, args=("the client went away",)).start()
    started = time.perf_counter()
    with stop_on(stop), pytest.raises(Cancelled, match="the client went away"):
        _run(store, "issues", slow, MEMBER, schemas, max_time_ms=60_000)
    assert time.perf_counter() - started < stopped_within


# MongoDB's documented semantics on a small example: a localField array matches any of its elements,
# a missing localField matches a foreignField that is null or missing, a foreignField path crosses
# arrays, `let` variables are read in the joined pipeline's `$expr`, and the combined form (MongoDB 5)
# applies the equality match and then the pipeline.
ORDERS = [
    {"_id": 1, "item": "almonds", "price": 12},
    {"_id": 2, "item": "pecans", "price": 20},
    {"_id": 3, "items": ["almonds", "cashews"]},
    {"_id": 4},
]
STOCK = [
    {"_id": 10, "sku": "almonds", "instock": 120},
    {"_id": 11, "sku": "pecans", "instock": 70},
    {"_id": 12, "sku": "cashews", "instock": 0},
    {"_id": 13, "sku": None, "instock": 5},
    {"_id": 14, "instock": 6},
    {"_id": 15, "skus": [{"sku": "pecans"}, {"sku": "walnuts"}], "instock": 9},
]
SEMANTICS = [
    (
        [
            {"$lookup": {"from": "stock", "localField": "item", "foreignField": "sku", "as": "s"}},
            {"$project": {"price": 1, "n": "$s.instock", "_id": 0}},
        ],
        [{"price": 12, "n": [120]}, {"price": 20, "n": [70]}, {"n": [5, 6, 9]}, {"n": [5, 6, 9]}],
    ),
    (
        [
            {"$lookup": {"from": "stock", "localField": "items", "foreignField": "sku", "as": "s"}},
            {"$project": {"n": "$s.instock", "_id": 0}},
        ],
        [{"n": [5, 6, 9]}, {"n": [5, 6, 9]}, {"n": [120, 0]}, {"n": [5, 6, 9]}],
    ),
    (
        [
            {"$lookup": {"from": "stock", "localField": "item", "foreignField": "skus.sku", "as": "s"}},
            {"$project": {"n": "$s.instock", "_id": 0}},
        ],
        [{"n": []}, {"n": [9]}, {"n": [120, 70, 0, 5, 6]}, {"n": [120, 70, 0, 5, 6]}],
    ),
    (
        [
            {
                "$lookup": {
                    "from": "stock",
                    "let": {"want": "$price"},
                    "as": "s",
                    "pipeline": [
                        {"$match": {"$expr": {"$gte": ["$instock", {"$multiply": ["$$want", 5]}]}}},
                        {"$project": {"instock": 1}},
                    ],
                }
            },
            {"$project": {"price": 1, "n": "$s.instock", "_id": 0}},
        ],
        # 12 * 5 = 60 and 20 * 5 = 100; no price: $multiply is null, and every number is above null
        [
            {"price": 12, "n": [120, 70]},
            {"price": 20, "n": [120]},
            {"n": [120, 70, 0, 5, 6, 9]},
            {"n": [120, 70, 0, 5, 6, 9]},
        ],
    ),
    (
        [
            {
                "$lookup": {
                    "from": "stock",
                    "let": {"item": "$item"},
                    "as": "s",
                    "pipeline": [{"$match": {"$expr": {"$eq": ["$sku", "$$item"]}}}],
                }
            },
            {"$project": {"n": "$s.instock", "_id": 0}},
        ],
        # a variable bound to a missing field is missing: not equal to a null sku, equal to a missing one
        [{"n": [120]}, {"n": [70]}, {"n": [6, 9]}, {"n": [6, 9]}],
    ),
    (
        [
            {
                "$lookup": {
                    "from": "stock",
                    "localField": "item",
                    "foreignField": "sku",
                    "let": {"p": "$price"},
                    "as": "s",
                    "pipeline": [{"$match": {"$expr": {"$gt": ["$instock", "$$p"]}}}],
                }
            },
            {"$project": {"n": {"$size": "$s"}, "_id": 0}},
        ],
        # the equality first (orders 3 and 4 meet skus 13, 14 and 15), then instock > price (null: all)
        [{"n": 1}, {"n": 1}, {"n": 3}, {"n": 3}],
    ),
]


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "mongomock://"])
@pytest.mark.parametrize("case", range(len(SEMANTICS)))
def test_both_forms_have_mongodbs_semantics(case, embedded):
    pipeline, expected = SEMANTICS[case]
    db = mongomock.MongoClient().db
    db.orders.insert_many([{**o, "tenant_id": "acme", "acl": ["*"]} for o in ORDERS])
    db.stock.insert_many([{**s, "tenant_id": "acme", "acl": ["*"]} for s in STOCK])
    schemas = {"orders": schema_from_documents("orders", ORDERS), "stock": schema_from_documents("stock", STOCK)}
    store = SimpleNamespace(embedded=embedded, revision=1 if embedded else None, collection=lambda name: db[name])
    assert _run(store, "orders", pipeline, [], schemas) == expected


def test_a_tend_style_join_runs_as_written():
    """TEND's join shape: a school's drivers through an array of the joined documents, unwound, projected."""
    schools = [{"School_ID": 1, "School": "Bourne"}, {"School_ID": 2, "School": "Cam"}, {"School": "Noid"}]
    drivers = [
        {
            "Driver_ID": 1,
            "Name": "Ann",
            "school_bus": [{"School_ID": 1, "Years_Working": 3}, {"School_ID": 2, "Years_Working": 1}],
        },
        {"Driver_ID": 2, "Name": "Bob", "school_bus": [{"School_ID": 2, "Years_Working": 7}]},
        {"Driver_ID": 3, "Name": "Cy", "school_bus": []},
    ]
    db = mongomock.MongoClient().db
    db.school.insert_many([{**s, "tenant_id": "t", "acl": ["*"]} for s in schools])
    db.driver.insert_many([{**d, "tenant_id": "t", "acl": ["*"]} for d in drivers])
    db.driver.insert_one(
        {"Driver_ID": 9, "Name": "Other tenant's", "school_bus": [{"School_ID": 1}], "tenant_id": "u", "acl": ["*"]}
    )
    schemas = {"school": schema_from_documents("school", schools), "driver": schema_from_documents("driver", drivers)}
    pipeline = [
        {
            "$lookup": {
                "from": "driver",
                "localField": "School_ID",
                "foreignField": "school_bus.School_ID",
                "as": "Docs1",
            }
        },
        {"$unwind": "$Docs1"},
        {"$project": {"School": 1, "Name": "$Docs1.Name", "_id": 0}},
    ]
    assert validate_pipeline(pipeline, schemas["school"], schemas=schemas) == []
    store = SimpleNamespace(embedded=True, revision=1, collection=lambda name: db[name])
    rows = run_pipeline(store, "school", pipeline, tenant="t", principals=[], schema=schemas["school"])
    assert rows == [
        {"School": "Bourne", "Name": "Ann"},
        {"School": "Cam", "Name": "Ann"},
        {"School": "Cam", "Name": "Bob"},
    ]


def test_incidents_whose_fix_pr_was_reviewed_by_priya():
    """The form a compiled plan takes for a question across two collections: the join narrowed in its own
    pipeline, then the rows that found something. A private PR Priya reviewed counts only for its readers."""
    incidents = [
        {"ref": "INC-1", "title": "cache outage", "pr": "acme/api#1", "severity": "high"},
        {"ref": "INC-2", "title": "leaked key", "pr": "acme/api#2", "severity": "high"},
        {"ref": "INC-3", "title": "docs 404", "pr": "acme/api#3", "severity": "low"},
        {"ref": "INC-4", "title": "no fix yet", "severity": "low"},
    ]
    db = mongomock.MongoClient().db
    db.incidents.insert_many([{**i, "tenant_id": "acme", "acl": ["*"]} for i in incidents])
    db.pull_requests.insert_many([dict(pr) for pr in PRS])
    schemas = {"incidents": schema_from_documents("incidents", incidents), "pull_requests": SCHEMAS["pull_requests"]}
    pipeline = [
        {
            "$lookup": {
                "from": "pull_requests",
                "localField": "pr",
                "foreignField": "ref",
                "as": "fix_pr",
                "pipeline": [{"$match": {"reviews.user.login": "priya"}}, {"$project": {"title": 1}}],
            }
        },
        {"$match": {"fix_pr": {"$ne": []}}},
        {"$project": {"fix_pr": 0}},
        {"$sort": {"ref": 1}},
    ]
    store = SimpleNamespace(embedded=True, revision=1, collection=lambda name: db[name])
    refs = {
        who: [r["ref"] for r in _run(store, "incidents", pipeline, principals, schemas)]
        for who, principals in (("member", MEMBER), ("outsider", OUTSIDER))
    }
    assert refs == {"member": ["INC-1", "INC-2"], "outsider": ["INC-1"]}


def test_the_query_command_joins_in_the_askers_scope(sample_dir):
    """End to end through `context-engine query`: the same join, asked by a member of #security-private
    and by someone who is not; the outsider's joined side is empty, and no hidden field comes out."""
    import json

    from tests.conftest import run_cli

    pipeline = json.dumps(
        [
            {"$limit": 2},
            {
                "$lookup": {
                    "from": "messages",
                    "as": "m",
                    "pipeline": [{"$match": {"channel": "security-private"}}, {"$project": {"text": 1}}],
                }
            },
        ]
    )
    joined = {}
    for who in ("sokafor", "zwei-dev"):
        done = run_cli("query", "--data-dir", str(sample_dir), "--as", who, "--json", "pull_requests", pipeline)
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)["records"]
        assert len(rows) == 2 and not any(HIDDEN_FIELDS & set(doc) for row in rows for doc in row["m"])
        joined[who] = sum(len(row["m"]) for row in rows)
    assert joined["zwei-dev"] == 0 < joined["sokafor"]

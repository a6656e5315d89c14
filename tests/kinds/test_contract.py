"""The contract every collection kind keeps (`kinds`): each built-in spec and a tenant's own one go
through the same stages — schema discovery, offline planning (a list, a count, a time question, worded
from the spec), compilation, validation, execution in scope, chunking, links and the composed answer —
and each stage gives the right, non-empty result. Adding a kind is one spec plus its connector: if the
spec lacks what a stage needs, this test says which.

Records are made per kind (a factory per built-in source shape; a tenant's own kind's records from its
spec's fields), stored in a mongomock database (tenant "t") with one private record per kind that only
`team-x` may read, and asked about as `bob`, who is not in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import mongomock
import pytest

from context_engine.answering.links import follow_links
from context_engine.kinds import BUILTIN, CollectionSpec, PersonField, Registry
from context_engine.query.answer import compose
from context_engine.query.catalog import Catalog
from context_engine.query.compile import compile_plan
from context_engine.query.engine import Success, resolve
from context_engine.query.execute import run_pipeline
from context_engine.query.offline import CONFIDENT, OfflinePlanner
from context_engine.query.schema import CollectionSchema, schema_from_documents
from context_engine.query.validate import validate_pipeline
from context_engine.retrievers.chunking import chunk_collection

NOW = datetime(2025, 12, 1, 12, 0)
PEOPLE = [
    {"login": "priya", "name": "Priya Raman", "slack_id": "U01PRIYA", "jira": "priya.r", "email": "priya@acme.dev"},
    {"login": "quinn", "name": "Quinn Adler", "slack_id": "U02QUINN", "jira": "quinn.a", "email": "quinn@acme.dev"},
]
MEMBER, OUTSIDER = ["team-x"], ["bob"]

INCIDENTS = CollectionSpec(
    name="incidents",
    noun="incident",
    key="id",
    ref_prefix="INC-",
    times={"created": ("started_at",), "resolved": ("resolved_at",)},
    people={"author": (PersonField("reported_by", "github"),), "assignee": (PersonField("commander", "github"),)},
    values={"severity": ("severity",), "service": ("service",), "status": ("status",)},
    text=("title", "summary"),
    references={"pr": "pull_requests"},
)

# When each kind's six public records were created: two in 2024 (and the private one), the rest in
# 2025; records 0, 2 and 4 are Priya's. Six: enough for discovery to call a repeated value an enumeration.
CREATED = [
    datetime(2024, 3, 5, 10),
    datetime(2024, 9, 12, 16),
    datetime(2025, 2, 1, 9),
    datetime(2025, 6, 30, 14),
    datetime(2025, 8, 1, 8),
    datetime(2025, 10, 9, 17),
]
PRIVATE_CREATED = datetime(2024, 5, 5, 5)
AUTHORS = ["priya", "quinn"] * 3
PUBLIC = len(CREATED)


def _person(login: str) -> dict[str, Any]:
    return next(p for p in PEOPLE if p["login"] == login)


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        doc = doc.setdefault(key, {})
    doc[last] = value


def pull_requests(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    n = i + 1
    return {
        "ref": f"acme/web#{n}",
        "repo": "acme/web",
        "number": n,
        "title": f"Retry payment webhooks {n}",
        "body": f"Backs off on 5xx. See {mention}.",
        "state": "open",
        "user": {"login": who},
        "created_at": when,
        "html_url": f"https://github.com/acme/web/pull/{n}",
        "labels": [{"name": "payments"}],
    }


def issues(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    key = f"ENG-{i + 1}"
    return {
        "ref": key,
        "url": f"https://acme.atlassian.net/browse/{key}",
        "fields": {
            "summary": f"Checkout times out {i + 1}",
            "description": f"Customers wait. Related: {mention}",
            "reporter": {"name": _person(who)["jira"]},
            "created": when,
            "status": {"name": "Open"},
            "project": {"key": "ENG"},
        },
    }


def messages(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    ts = f"{1700000000 + i * 1000}.000100"
    return {
        "ref": f"C01GEN:{ts}",
        "channel_id": "C01GEN",
        "channel": "general",
        "ts": ts,
        "thread_ts": ts,
        "text": f"Deploy of the cache finished {i + 1}, see {mention}",
        "user": _person(who)["slack_id"],
        "date": when,
        "permalink": f"https://acme.slack.com/archives/C01GEN/p{ts.replace('.', '')}",
    }


def documents(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    return {
        "ref": f"docs/adr-{i + 1}",
        "title": f"ADR-{i + 1:03d}: Use Redis for sessions",
        "body": f"We chose Redis. See {mention}.",
        "author": {"login": who},
        "created_at": when,
        "url": f"https://docs.acme.dev/adr-{i + 1}",
        "space": "eng",
    }


def commits(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    sha = f"{i + 1:x}" * 40
    return {
        "ref": sha[:40],
        "repo": "acme/web",
        "message": f"Fix flaky cache test {i + 1}\n\nsee {mention}",
        "author": {"email": _person(who)["email"], "name": _person(who)["name"], "date": when},
        "html_url": f"https://github.com/acme/web/commit/{sha[:40]}",
    }


def people(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
    return {"ref": f"person-{i}", "name": f"Member {i}", "team": "web" if i % 2 == 0 else "data", "aliases": [f"m{i}"]}


def own_kind(spec: CollectionSpec) -> Callable[[int, datetime, str, str], dict[str, Any]]:
    """Records of a tenant's own kind, from its spec's fields alone."""

    def make(i: int, when: datetime, who: str, mention: str) -> dict[str, Any]:
        doc: dict[str, Any] = {"ref": f"{spec.ref_prefix}{i + 1}"}
        _set(doc, spec.key, i + 1)
        for role, paths in spec.times.items():
            _set(doc, paths[0], when if role == "created" else datetime(2025, 12, 1))
        for fields in spec.people.values():
            _set(
                doc,
                fields[0].path,
                _person(who)["login"] if fields[0].handle == "github" else _person(who)[fields[0].handle],
            )
        for role, paths in spec.values.items():
            _set(doc, paths[0], f"{role}-{i % 2}")
        for n, path in enumerate(spec.text):
            _set(doc, path, f"Payments API errors {i + 1}" if n == 0 else f"Rolled back; see {mention}.")
        for path in spec.references:  # the private record references a public pull request (the first)
            _set(doc, path, f"acme/web#{i % PUBLIC + 1}")
        return doc

    return make


@dataclass
class Case:
    spec: CollectionSpec
    make: Callable[[int, datetime, str, str], dict[str, Any]]
    said: str  # how a question names several records of the kind
    list_question: str  # a list question, and the records (by factory index) it must find
    listed: tuple[int, ...]
    linkable: bool = True  # its text can reference other records


CASES = [
    Case(BUILTIN["pull_requests"], pull_requests, "pull requests", "pull requests by Priya Raman", (0, 2, 4)),
    Case(BUILTIN["issues"], issues, "issues", "issues reported by Priya Raman", (0, 2, 4)),
    Case(BUILTIN["messages"], messages, "messages", "messages by Priya Raman", (0, 2, 4)),
    Case(BUILTIN["documents"], documents, "documents", "documents by Priya Raman", (0, 2, 4)),
    Case(BUILTIN["commits"], commits, "commits", "commits by Priya Raman", (0, 2, 4)),
    Case(BUILTIN["people"], people, "team members", "who is on the web team", (0, 2, 4), linkable=False),
    Case(INCIDENTS, own_kind(INCIDENTS), "incidents", "incidents reported by Priya Raman", (0, 2, 4)),
]


class MongomockStore:
    """The store as the engine reads it (collections, refs, a tenant's kinds) over mongomock."""

    embedded = False
    file = None
    revision = 0

    def __init__(self, registry: Registry):
        self.db = mongomock.MongoClient().db
        self.registry = registry

    def collection(self, name: str):
        return self.db[name]

    def find_refs(self, name: str, scope: dict[str, Any], refs) -> list[dict[str, Any]]:
        return list(self.db[name].find({**scope, "ref": {"$in": list(refs)}}))

    def kinds(self, tenant: str) -> Registry:
        return self.registry


def _records(case: Case) -> list[dict[str, Any]]:
    """The public records, each referencing the next (the last the first), and one private one."""
    made = [case.make(i, when, who, "") for i, (when, who) in enumerate(zip(CREATED, AUTHORS))]
    mentions = [_mention(case.spec, made[(i + 1) % len(made)]) for i in range(len(made))]
    docs = [
        {**case.make(i, when, who, mentions[i]), "tenant_id": "t", "acl": ["*"]}
        for i, (when, who) in enumerate(zip(CREATED, AUTHORS))
    ]
    private = {**case.make(PUBLIC, PRIVATE_CREATED, "priya", ""), "tenant_id": "t", "acl": list(MEMBER)}
    return [*docs, private]


def _mention(spec: CollectionSpec, record: dict[str, Any]) -> str:
    """How a record's text refers to another record of its kind: its URL, or its key."""
    return next((record[f] for f in ("html_url", "permalink", "url") if f in record), record["ref"])


@pytest.fixture(scope="module")
def world():
    registry = Registry([INCIDENTS])
    store = MongomockStore(registry)
    stored: dict[str, list[dict[str, Any]]] = {}
    for case in CASES:
        stored[case.spec.name] = _records(case)
        store.db[case.spec.name].insert_many([dict(doc) for doc in stored[case.spec.name]])
    schemas = {
        case.spec.name: schema_from_documents(
            case.spec.name, _visible(stored[case.spec.name]), own_kind=None if case.spec.builtin else case.spec
        )
        for case in CASES
    }
    return store, Catalog("t", schemas, PEOPLE), stored


def _visible(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in d.items() if k not in ("tenant_id", "acl")} for d in docs if "*" in d["acl"]]


def _plan(catalog: Catalog, question: str):
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None, failed
    return OfflinePlanner().plan(ctx)


def _run(store, catalog, plan, principals=OUTSIDER) -> list[dict[str, Any]]:
    schema = catalog.schemas[plan.collection]
    assert compile_plan(plan.ir, schema) == plan.pipeline  # compiled from the IR, deterministically
    assert validate_pipeline(plan.pipeline, schema) == []
    return run_pipeline(store, plan.collection, plan.pipeline, tenant="t", principals=principals, schema=schema)


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_schema_discovery_knows_the_kind(world, case):
    _, catalog, _ = world
    schema = catalog.schemas[case.spec.name]
    assert schema.kind is case.spec
    assert CollectionSchema.from_json(schema.to_json()).kind == case.spec
    assert schema.text_fields and set(schema.text_fields) <= set(case.spec.text)
    if "created" in case.spec.times:
        assert any(schema.has_path(p) for p in case.spec.times["created"])


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_a_count_plans_and_runs_in_scope(world, case):
    store, catalog, _ = world
    plan = _plan(catalog, f"how many {case.said} are there")
    assert (plan.collection, plan.pipeline[-1]) == (case.spec.name, {"$count": "count"})
    assert _run(store, catalog, plan) == [{"count": PUBLIC}]  # the private record is not bob's to count
    assert _run(store, catalog, plan, MEMBER) == [{"count": PUBLIC + 1}]
    text, citations = compose(
        Success(plan, [{"count": PUBLIC}], []), plan.collection, catalog.schemas[plan.collection].kind
    )
    assert text.startswith(f"{PUBLIC} {case.spec.plural} match") and citations == []


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_a_list_plans_runs_and_is_answered_with_citations(world, case):
    store, catalog, stored = world
    plan = _plan(catalog, case.list_question)
    assert plan.collection == case.spec.name and plan.confidence >= CONFIDENT, plan.notes
    rows = _run(store, catalog, plan)
    assert sorted(r["ref"] for r in rows) == sorted(stored[case.spec.name][i]["ref"] for i in case.listed)
    text, citations = compose(Success(plan, rows, []), plan.collection, catalog.schemas[plan.collection].kind)
    assert text.startswith(f"Found {len(case.listed)} {case.spec.plural}:")
    assert [c["id"] for c in citations] == [r["ref"] for r in rows]
    assert all(c["title"] and c["title"] != c["id"] for c in citations)  # titled by the kind's title field


@pytest.mark.parametrize("case", [c for c in CASES if "created" in c.spec.times], ids=lambda c: c.spec.name)
def test_a_time_question_filters_on_the_kinds_created_time(world, case):
    store, catalog, _ = world
    plan = _plan(catalog, f"how many {case.said} were created in 2024")
    created = next(p for p in case.spec.times["created"] if catalog.schemas[case.spec.name].has_path(p))
    match = next(stage["$match"] for stage in plan.pipeline if "$match" in stage)
    assert match[created] == {"$gte": datetime(2024, 1, 1), "$lt": datetime(2025, 1, 1)}
    assert _run(store, catalog, plan) == [{"count": 2}]
    assert _run(store, catalog, plan, MEMBER) == [{"count": 3}]


def test_a_kind_without_a_created_time_is_not_given_one(world):
    """People have no dates: a time question about them filters on no invented field."""
    store, catalog, _ = world
    plan = _plan(catalog, "how many team members were created in 2024")
    assert plan.collection == "people"
    assert plan.confidence < CONFIDENT and any("2024" in s["text"] for s in plan.not_understood)
    assert _run(store, catalog, plan) == [{"count": PUBLIC}]


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_chunks_carry_the_kinds_title_author_and_date(world, case):
    _, _, stored = world
    docs = stored[case.spec.name]
    chunks = chunk_collection(case.spec.name, docs, kind=case.spec)
    if not case.spec.searchable:
        assert chunks == []
        return
    first = [c for c in chunks if c.doc_ref == docs[0]["ref"]]
    assert first and first[0].title and first[0].date == CREATED[0]
    assert first[0].author in {"priya", "U01PRIYA", "priya.r", "Priya Raman", "priya@acme.dev"}
    assert {c.doc_ref for c in chunks} == {d["ref"] for d in docs}
    private = [c for c in chunks if c.doc_ref == docs[PUBLIC]["ref"]]
    assert private and all(c.acl == MEMBER for c in private)


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_links_follow_the_kinds_references_in_scope(world, case):
    store, _, stored = world
    docs = stored[case.spec.name]
    chain = follow_links(store, "t", OUTSIDER, [docs[0]["ref"]], max_hops=1)
    pairs = {(link.source, link.target) for link in chain.links} | {(link.target, link.source) for link in chain.links}
    if not case.linkable:
        assert chain.links == [] and chain.records == []  # a kind without link text is in no link table
        return
    if case.spec.builtin:
        assert (docs[0]["ref"], docs[1]["ref"]) in pairs  # what it references
        assert (docs[PUBLIC - 1]["ref"], docs[0]["ref"]) in pairs  # and what references it
    else:  # its declared `pr` field links to the pull request, and the pull request back to it
        assert (docs[0]["ref"], "acme/web#1") in pairs
        back = follow_links(store, "t", OUTSIDER, ["acme/web#1"], max_hops=1)
        assert ("INC-1", "mentions", "acme/web#1") in {(link.source, link.relation, link.target) for link in back.links}
        assert "INC-7" not in {r.ref for r in back.records}  # the private incident is not bob's to reach
        back = follow_links(store, "t", MEMBER, ["acme/web#1"], max_hops=1)
        assert ("INC-7", "mentions", "acme/web#1") in {(link.source, link.relation, link.target) for link in back.links}
    assert docs[PUBLIC]["ref"] not in {r.ref for r in chain.records}
    assert all(r.title for r in chain.records)


def test_a_spec_whose_created_time_the_records_lack_plans_no_date_and_says_so():
    """A spec naming a created time its records do not have: the question's time is reported as not
    understood (a model may try), chunks are undated, answers still cite — no stage crashes."""
    spec = CollectionSpec(
        name="outages",
        noun="outage",
        key="id",
        ref_prefix="OUT-",
        times={"created": ("opened_at",)},
        values={"service": ("service",)},
        text=("title",),
    )
    docs = [
        {"ref": f"OUT-{i}", "id": i, "title": f"Outage {i}", "service": "payments", "started_at": CREATED[i]}
        for i in range(3)
    ]
    schema = schema_from_documents("outages", docs, own_kind=spec)
    catalog = Catalog("t", {"outages": schema}, PEOPLE)
    plan = _plan(catalog, "how many outages were created in 2024")
    assert plan.collection == "outages" and "started_at" not in str(plan.pipeline)
    assert plan.confidence < CONFIDENT and any("2024" in s["text"] for s in plan.not_understood)
    store = MongomockStore(Registry([spec]))
    store.db["outages"].insert_many([{**d, "tenant_id": "t", "acl": ["*"]} for d in docs])
    assert _run(store, catalog, plan) == [{"count": 3}]
    chunks = chunk_collection("outages", docs, tenant="t", kind=spec)
    assert [c.date for c in chunks] == [None, None, None] and [c.title for c in chunks] == [
        "Outage 0",
        "Outage 1",
        "Outage 2",
    ]
    listed = _plan(catalog, "outages on the payments service")
    rows = _run(store, catalog, listed)
    text, citations = compose(Success(listed, rows, []), "outages", spec)
    assert text.startswith("Found 3 outages:") and [c["id"] for c in citations] == ["OUT-2", "OUT-1", "OUT-0"]
    assert _plan(catalog, "outages last month").pipeline == []  # nothing it can ask: the engine says so


def test_own_kinds_words_name_it_beside_the_builtin_ones(world):
    """A question naming a tenant's own kind plans on it; built-in words keep their kinds."""
    _, catalog, _ = world
    assert _plan(catalog, "sev1 incidents").collection == "incidents"
    assert _plan(catalog, "pull requests by Priya Raman").collection == "pull_requests"
    assert re.search(INCIDENTS.pattern(), "3 incidents", re.I)


def test_an_own_kinds_chunk_group_is_one_unit_readable_by_those_who_read_all_of_it():
    """Records sharing a `chunk_group` value (an incident's timeline entries) are one unit, in time
    order, under the first one's ref; its access list is what every record of it allows."""
    spec = CollectionSpec(
        name="timeline",
        noun="timeline entry",
        plural="timeline entries",
        key="id",
        ref_prefix="TL-",
        times={"created": ("at",)},
        text=("note",),
        chunk_group="incident",
    )
    docs = [
        {
            "ref": "TL-2",
            "id": 2,
            "incident": "INC-1",
            "note": "Rolled back.",
            "at": datetime(2025, 1, 1, 10),
            "tenant_id": "t",
            "acl": ["*"],
        },
        {
            "ref": "TL-1",
            "id": 1,
            "incident": "INC-1",
            "note": "Paged the on-call.",
            "at": datetime(2025, 1, 1, 9),
            "tenant_id": "t",
            "acl": ["*"],
        },
        {
            "ref": "TL-3",
            "id": 3,
            "incident": "INC-2",
            "note": "Cert renewed.",
            "at": datetime(2025, 2, 1),
            "tenant_id": "t",
            "acl": ["*"],
        },
        {
            "ref": "TL-4",
            "id": 4,
            "incident": "INC-2",
            "note": "Customer named.",
            "at": datetime(2025, 2, 2),
            "tenant_id": "t",
            "acl": ["team-x"],
        },
    ]
    chunks = chunk_collection("timeline", docs, kind=spec)
    assert [(c.doc_ref, c.text, c.acl) for c in chunks] == [
        ("TL-1", "Paged the on-call.\n\nRolled back.", ["*"]),
        ("TL-3", "Cert renewed.\n\nCustomer named.", ["team-x"]),
    ]  # the private entry narrows its unit


@pytest.mark.parametrize("case", CASES, ids=[c.spec.name for c in CASES])
def test_the_llm_planner_is_shown_the_kind_and_its_plan_runs_in_scope(world, case):
    """The other planner: the prompt a chat model gets names the kind's collection and its fields, and a
    count it answers (a scripted model here) validates and runs within the asker's access."""
    from context_engine.query.llm_planner import LLMPlanner, build_messages
    from tests.chat_fakes import ScriptedChatModel

    store, catalog, _ = world
    question = f"how many {case.said} are there"
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None, failed
    prompt = "\n".join(text for _, text in build_messages(ctx))
    schema = catalog.schemas[case.spec.name]
    assert case.spec.name in prompt and schema.text_fields[0].rsplit(".", 1)[-1] in prompt
    answer = {"collection": case.spec.name, "pipeline": [{"$count": "count"}]}
    plan = LLMPlanner(ScriptedChatModel.answering(answer)).plan(ctx)
    assert (plan.planner, plan.collection, plan.pipeline) == ("llm", case.spec.name, [{"$count": "count"}])
    assert validate_pipeline(plan.pipeline, schema) == []
    assert run_pipeline(store, plan.collection, plan.pipeline, tenant="t", principals=OUTSIDER, schema=schema) == [
        {"count": PUBLIC}
    ]
    assert run_pipeline(store, plan.collection, plan.pipeline, tenant="t", principals=MEMBER, schema=schema) == [
        {"count": PUBLIC + 1}
    ]

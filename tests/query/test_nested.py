"""Nested plans (`PlanIR.nested`) on hand-made records: the inner step ranks, its top result is bound into the
outer plan (`compile.bind`), which is compiled and run after it; a tie at the top is said, never hidden."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.config import Settings
from context_engine.query import engine
from context_engine.query.answer import compose
from context_engine.query.compile import CompileError, bind, bucket_range, compile_plan
from context_engine.query.engine import Success
from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.ir import Filter, IRError, Nested, PlanIR, Shape, TimeRange
from context_engine.query.plan import Attempt, Plan, PlanningContext
from tests.query.conftest import hand_made_world

PRS = [  # ann opened three PRs in 2021, bob two; in March 2021 two were merged, in May one
    {"ref": "p#1", "user": {"login": "ann"}, "created_at": datetime(2021, 3, 1), "merged_at": datetime(2021, 3, 2)},
    {"ref": "p#2", "user": {"login": "ann"}, "created_at": datetime(2021, 3, 5), "merged_at": datetime(2021, 3, 6)},
    {"ref": "p#3", "user": {"login": "ann"}, "created_at": datetime(2021, 5, 1), "merged_at": datetime(2021, 5, 2)},
    {"ref": "p#4", "user": {"login": "bob"}, "created_at": datetime(2021, 6, 1), "merged_at": None},
    {"ref": "p#5", "user": {"login": "bob"}, "created_at": datetime(2021, 7, 1), "merged_at": None},
    {"ref": "p#6", "user": {"login": "cy"}, "created_at": datetime(2020, 7, 1), "merged_at": datetime(2020, 7, 2)},
]
ISSUES = [
    {"ref": "i#1", "user": {"login": "ann"}, "created_at": datetime(2021, 2, 1)},
    {"ref": "i#2", "user": {"login": "ann"}, "created_at": datetime(2020, 2, 1)},
    {"ref": "i#3", "user": {"login": "bob"}, "created_at": datetime(2021, 4, 1)},
    {"ref": "i#4", "user": {"login": "bob"}, "created_at": datetime(2021, 4, 2)},
]
YEAR = TimeRange("created_at", datetime(2021, 1, 1), datetime(2022, 1, 1))


@pytest.fixture
def world(tmp_path):
    return hand_made_world(tmp_path, {"pull_requests": PRS, "issues": ISSUES}, [])


def top_author(limit=10) -> PlanIR:
    return PlanIR("pull_requests", times=[YEAR], shape=Shape("argmax", field="user.login", over="groups", limit=limit))


def issues_of_the_top_author() -> PlanIR:
    """ "The person who opened the most PRs in 2021: how many issues did they open that year?" """
    nested = Nested(top_author(), "person", "user.login", span=(0, 40))
    return PlanIR("issues", times=[YEAR], shape=Shape("count"), nested=nested)


def ctx_of(catalog, question="q") -> PlanningContext:
    return PlanningContext(question, datetime(2025, 1, 1), catalog.schemas, catalog.directory)


def test_a_nested_plan_round_trips_as_json():
    ir = issues_of_the_top_author()
    assert PlanIR.from_json(ir.to_json()) == ir
    ran = bind(ir, [{"$match": {}}], [{"_id": "ann", "count": 3}, {"_id": "bob", "count": 2}])
    again = PlanIR.from_json(ran.to_json())
    assert again == ran and again.nested.bound and again.nested.value == "ann"


def test_a_nested_plan_is_one_level_deep_and_fills_a_known_slot():
    with pytest.raises(IRError):
        Nested(issues_of_the_top_author(), "person", "user.login")
    with pytest.raises(IRError):
        Nested(top_author(), "label", "labels.name")


def test_the_top_person_becomes_the_outer_condition():
    ir = bind(issues_of_the_top_author(), [], [{"_id": "ann", "count": 3}, {"_id": "bob", "count": 2}])
    assert Filter("user.login", "eq", "ann", span=(0, 40)) in ir.filters
    assert ir.nested.value == "ann" and ir.nested.count == 3 and ir.nested.tie == []
    # and another kind's handle of that person, when the outer field keeps another kind
    other = bind(issues_of_the_top_author(), [], [{"_id": "ann", "count": 3}], handle="Ann Smith")
    assert other.filters[-1].value == "Ann Smith" and other.nested.value == "ann"


def test_rows_level_at_the_top_are_the_tie():
    ir = bind(
        issues_of_the_top_author(),
        [],
        [{"_id": "ann", "count": 3}, {"_id": "bob", "count": 3}, {"_id": "cy", "count": 1}],
    )
    assert ir.nested.value == "ann" and ir.nested.tie == ["bob"]


def test_no_inner_rows_bind_nothing():
    ir = bind(issues_of_the_top_author(), [{"$match": {}}], [])
    assert ir.nested.bound and ir.nested.value is None and ir.filters == []


@pytest.mark.parametrize(
    "bucket,key,start,end",
    [
        ("month", "2021-03", datetime(2021, 3, 1), datetime(2021, 4, 1)),
        ("month", "2021-12", datetime(2021, 12, 1), datetime(2022, 1, 1)),
        ("year", "2019", datetime(2019, 1, 1), datetime(2020, 1, 1)),
        ("day", "2019-02-28", datetime(2019, 2, 28), datetime(2019, 3, 1)),
        ("week", "2019-W14", datetime(2019, 4, 1), datetime(2019, 4, 8)),
    ],
)
def test_a_bucket_key_is_its_range(bucket, key, start, end):
    assert bucket_range(bucket, key) == (start, end)


def test_the_top_period_becomes_the_outer_time():
    busiest = PlanIR(
        "pull_requests",
        times=[TimeRange("merged_at", datetime(2021, 1, 1), datetime(2022, 1, 1))],
        shape=Shape("argmax", field="merged_at", bucket="month", over="groups", limit=10),
    )
    ir = PlanIR("pull_requests", shape=Shape("group", field="user.login"), nested=Nested(busiest, "time", "merged_at"))
    bound = bind(ir, [], [{"_id": "2021-03", "count": 2}, {"_id": "2021-05", "count": 1}])
    assert [(t.field, t.start, t.end) for t in bound.times] == [
        ("merged_at", datetime(2021, 3, 1), datetime(2021, 4, 1))
    ]
    cyclic = PlanIR("pull_requests", shape=Shape("argmax", field="merged_at", bucket="hour", over="groups"))
    with pytest.raises(CompileError):  # an hour of the day is no period to ask about
        bind(PlanIR("pull_requests", nested=Nested(cyclic, "time", "merged_at")), [], [{"_id": 14, "count": 3}])


def test_an_extreme_over_groups_keeps_its_limit_of_the_ranking(world):
    store, catalog = world
    schema = catalog.schemas["pull_requests"]
    pipeline = compile_plan(top_author(limit=2), schema)
    assert pipeline[-1] == {"$limit": 2}
    assert compile_plan(top_author(limit=None), schema)[-1] == {"$limit": 1}  # the one extreme, as before
    rows = run_pipeline(store, "pull_requests", pipeline, tenant="t", principals=[], schema=schema)
    assert [(r["_id"], r["count"]) for r in rows] == [("ann", 3), ("bob", 2)]


def settings_of(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, mongodb_uri=None, tenant="t", use_llm=False)


def test_the_inner_step_runs_scoped_and_the_outer_is_compiled_after_it(world, tmp_path):
    store, catalog = world
    ir = issues_of_the_top_author()
    schema = catalog.schemas["issues"]
    plan = Plan("issues", compile_plan(ir, schema, catalog.schemas), ir=ir)
    bound = engine.run_inner(plan, ctx_of(catalog), store, settings_of(tmp_path), "t")
    assert bound.ir.nested.value == "ann" and bound.ir.nested.pipeline[-1] == {"$limit": 10}
    assert bound.pipeline[0]["$match"]["user.login"] == "ann"
    rows = engine.execute(bound, ctx_of(catalog), store, settings_of(tmp_path), "t")
    assert rows == [{"count": 1}]  # ann's 2021 issue, not her 2020 one
    # another tenant's records are not the inner step's: nothing found, nothing bound
    elsewhere = engine.run_inner(plan, ctx_of(catalog), store, settings_of(tmp_path), "other")
    assert elsewhere.ir.nested.value is None


def test_an_inner_step_the_validator_refuses_is_an_error(world, tmp_path):
    store, catalog = world
    ir = issues_of_the_top_author()
    ir.nested.inner.shape.field = "no.such.field"
    plan = Plan("issues", compile_plan(ir, catalog.schemas["issues"], catalog.schemas), ir=ir)
    with pytest.raises(ExecutionError, match="first step"):
        engine.run_inner(plan, ctx_of(catalog), store, settings_of(tmp_path), "t")


def test_a_tie_at_the_top_is_said_in_the_answer(tmp_path):
    prs = [p for p in PRS if p["ref"] != "p#3"]  # ann and bob two PRs each in 2021
    store, catalog = hand_made_world(tmp_path, {"pull_requests": prs, "issues": ISSUES}, [])
    ir = issues_of_the_top_author()
    plan = Plan("issues", compile_plan(ir, catalog.schemas["issues"], catalog.schemas), ir=ir)
    bound = engine.run_inner(plan, ctx_of(catalog), store, settings_of(tmp_path), "t")
    assert bound.ir.nested.value == "ann" and bound.ir.nested.tie == ["bob"]
    rows = engine.execute(bound, ctx_of(catalog), store, settings_of(tmp_path), "t")
    text, _ = compose(Success(bound, rows, [Attempt(bound)]), "issues")
    assert "the person at the top is ann, with 2" in text
    assert "tied with bob" in text and "for ann only" in text
    assert "1 issue matches" in text


def test_an_inner_step_that_found_nothing_says_so():
    ir = bind(issues_of_the_top_author(), [{"$match": {}}], [])
    plan = Plan("issues", [{"$match": {}}, {"$count": "count"}], ir=ir)
    text, _ = compose(engine.NoResults(plan, [Attempt(plan)], tried=""), "issues")
    assert text.startswith("The first step found nothing")

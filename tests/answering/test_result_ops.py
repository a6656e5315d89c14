"""Follow-ups that operate on the last answer's result (the sample tenant's data; worded unlike any set question)."""

from datetime import datetime

import pytest

from context_engine.answering.plan_ops import as_operation, base_of, narrowed_by
from context_engine.answering.result_ops import operate_on_result
from context_engine.config import Settings
from context_engine.query import engine
from context_engine.query.engine import principals_of
from context_engine.query.execute import run_pipeline
from context_engine.query.offline import OfflinePlanner
from context_engine.resources import catalog_for, store_for

NOW = datetime(2026, 11, 30, 12)


@pytest.fixture(scope="module")
def setup(sample_dir):
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)
    return settings, catalog, catalog.directory.asker("rsh-dev")


def _plan(setup, question):
    _, catalog, asker = setup
    ctx, failed = engine.resolve(question, NOW, catalog, asker)
    assert failed is None
    plan = OfflinePlanner().plan(ctx)
    assert plan.ir is not None and plan.pipeline, question
    return plan


def _turn(setup, question, **more):
    """A finished turn that ran the offline plan of `question`."""
    return {"standalone": question, "plan": {"ir": _plan(setup, question).ir.to_json()}, **more}


def _run(setup, plan):
    settings, catalog, asker = setup
    return run_pipeline(
        store_for(settings),
        plan.collection,
        plan.pipeline,
        tenant="acme",
        principals=principals_of(asker),
        schema=catalog.schemas.get(plan.collection),
        max_rows=10_000,
    )


def _operate(setup, asked, turns):
    _, catalog, asker = setup
    return operate_on_result(asked, turns, catalog, asker, NOW)


def _refs(rows):
    return {r["ref"] for r in rows}


def _all_of(setup, question):
    plan = _plan(setup, question)
    plan.pipeline = [s for s in plan.pipeline if "$limit" not in s]
    return _run(setup, plan)


@pytest.mark.parametrize("asked", ["and what about the remaining ones?", "剩下的那些呢"])
def test_the_rest_negates_the_condition_the_last_turn_added(setup, asked):
    wide, narrow = _turn(setup, "PRs opened in 2026"), _turn(setup, "open PRs opened in 2026")
    operation = _operate(setup, asked, [wide, narrow])
    assert operation is not None
    everything, opened = _refs(_all_of(setup, "PRs opened in 2026")), _refs(_all_of(setup, "open PRs opened in 2026"))
    assert opened and everything - opened
    operation.plan.pipeline = [s for s in operation.plan.pipeline if "$limit" not in s]
    assert _refs(_run(setup, operation.plan)) == everything - opened
    assert operation.plan.ir.times == base_of(narrow).times


def test_the_ones_that_did_not_on_a_first_turn_negate_its_one_condition_not_its_person(setup):
    counted = _turn(setup, "how many of Priya's PRs were merged in 2026")
    operation = _operate(setup, "and the ones which weren't?", [counted])
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "count"
    negated = [f for f in ir.filters if f.negate]
    assert [f.field for f in negated] == ["merged"]
    assert {f.field for f in ir.filters} == {f.field for f in base_of(counted).filters}


def test_the_rest_with_no_single_added_condition_is_not_guessed(setup):
    turn = _turn(setup, "open PRs labelled bug in 2026")  # two conditions, neither a person's: which one?
    assert _operate(setup, "the others", [turn]) is None


@pytest.mark.parametrize("asked", ["oops, make that the closed ones", "说错了，应该是关闭的"])
def test_a_correction_replaces_the_condition_and_keeps_the_window(setup, asked):
    turn = _turn(setup, "open issues from October 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    ir, meant = operation.plan.ir, _plan(setup, "closed issues from October 2026").ir
    assert [(f.field, f.op, f.value) for f in ir.filters] == [(f.field, f.op, f.value) for f in meant.filters]
    assert ir.times == base_of(turn).times


def test_a_correction_that_asks_a_question_of_its_own_is_not_a_correction(setup):
    turn = _turn(setup, "open issues from October 2026")
    assert _operate(setup, "scratch that - how many PRs did Priya open?", [turn]) is None


@pytest.mark.parametrize(
    "asked,limit", [("order them by comments, just the first two", 2), ("按评论数排一下，只要前两个", 2)]
)
def test_re_sorted_and_cut(setup, asked, limit):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    rows = _run(setup, operation.plan)
    everything = sorted(_all_of(setup, "PRs opened in 2026"), key=lambda r: -r["comments"])
    assert [r["comments"] for r in rows] == [r["comments"] for r in everything[:limit]]


@pytest.mark.parametrize(
    "asked", ["what's the total number of comments on those two, all together?", "这两个一共有多少条评论"]
)
def test_a_total_over_exactly_the_records_listed(setup, asked):
    listed = _operate(setup, "order them by comments, just the first two", [_turn(setup, "PRs opened in 2026")])
    turn = {"standalone": "", "plan": {"ir": listed.plan.ir.to_json()}}
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    (row,) = _run(setup, operation.plan)
    assert row["total"] == sum(r["comments"] for r in _run(setup, listed.plan))


def test_a_total_said_of_another_number_of_records_is_not_theirs(setup):
    listed = _operate(setup, "order them by comments, just the first two", [_turn(setup, "PRs opened in 2026")])
    turn = {"standalone": "", "plan": {"ir": listed.plan.ir.to_json()}}
    assert _operate(setup, "how many comments do those five add up to?", [turn]) is None
    assert _operate(setup, "how many comments does the top one have?", [turn]) is None  # not a total


def test_a_share_of_the_same_records_from_anyone(setup):
    turn = _turn(setup, "how many PRs did Priya open in 2026")
    operation = _operate(setup, "what fraction of all 2026 PRs is that?", [turn])
    assert operation is not None
    (row,) = _run(setup, operation.plan)
    mine, everyone = (
        _run(setup, _plan(setup, "how many PRs did Priya open in 2026")),
        _all_of(setup, "PRs opened in 2026"),
    )
    assert row["share"] == pytest.approx(mine[0]["count"] / len(everyone))


def test_the_top_value_of_a_ranking_becomes_a_condition(setup):
    ranked = _plan(setup, "which repo had the most PRs in 2026")
    top = _run(setup, ranked)[0]["_id"]
    field = ranked.ir.shape.field
    turn = {
        "standalone": "",
        "plan": {"ir": ranked.ir.to_json()},
        "answer_groups": {"field": field, "keys": [top]},
    }
    operation = _operate(setup, "how many open PRs were in that repo?", [turn])
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "count"
    assert (field, "eq", top) in {(f.field, f.op, f.value) for f in ir.filters}
    assert any(f.field == "state" for f in ir.filters) and ir.times == ranked.ir.times


@pytest.mark.parametrize("asked", ["list them please", "那就都列出来吧"])
def test_a_count_listed(setup, asked):
    turn = _turn(setup, "how many open PRs did Priya open in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    assert operation.plan.ir.shape.kind == "list"
    assert operation.plan.ir.filters == base_of(turn).filters


def test_words_before_a_listing_change_the_records_first(setup):
    wide, narrow = (
        _turn(setup, "how many PRs were opened in 2026"),
        _turn(setup, "how many open PRs were opened in 2026"),
    )
    operation = _operate(setup, "and the rest? list them", [wide, narrow])
    assert operation is not None
    assert operation.plan.ir.shape.kind == "list"
    assert [f.field for f in operation.plan.ir.filters if f.negate] == ["state"]


@pytest.mark.parametrize("asked", ["只看 Lars 的，列出来", "only Lars's — list them"])
def test_a_ranking_narrowed_to_one_person_and_listed_is_their_records(setup, asked):
    turn = _turn(setup, "who opened the most PRs in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None and operation.plan.ir.shape.kind == "list"
    rows = _run(setup, operation.plan)
    assert rows and all(r["user"]["login"] == "larsn" for r in rows)
    # the whole ranking listed is not what it ranked: left to the rewritten question
    assert _operate(setup, "list them", [turn]) is None


def test_nothing_without_a_plan_before(setup):
    assert _operate(setup, "and the rest?", []) is None
    assert _operate(setup, "and the rest?", [{"standalone": "hello", "plan": {}}]) is None


@pytest.mark.parametrize(
    "asked,order", [("and which one among them drew the fewest comments", 1), ("其中评论最多的是哪一个", -1)]
)
def test_the_one_of_the_last_records_with_the_most_of_a_measure(setup, asked, order):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    (row,) = _run(setup, operation.plan)
    assert row["comments"] == sorted(r["comments"] for r in _all_of(setup, "PRs opened in 2026"))[::order][0]
    assert operation.base.to_json() == base_of(turn).to_json()  # the next follow-up is about all of them


@pytest.mark.parametrize(
    "asked,order",
    [("which one drew the most discussion?", -1), ("哪一个留言最多？", -1), ("评论最少的是哪条", 1)],
)
def test_which_one_after_a_list_is_one_of_those_records(setup, asked, order):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    (row,) = _run(setup, operation.plan)
    assert row["comments"] == sorted(r["comments"] for r in _all_of(setup, "PRs opened in 2026"))[::order][0]
    # after a ranking of people "which one" is a person of it, not a record: not this operation
    assert _operate(setup, asked, [_turn(setup, "who opened the most PRs in 2026")]) is None


def test_how_many_was_that_after_a_ranking_counts_the_first_group(setup):
    ranked = _plan(setup, "who opened the most PRs in 2026")
    first = _run(setup, ranked)[0]
    turn = {
        "standalone": "",
        "plan": {"ir": ranked.ir.to_json()},
        "answer_groups": {"field": ranked.ir.shape.field, "keys": [first["_id"]]},
    }
    operation = _operate(setup, "so how many PRs is that exactly?", [turn])
    assert operation is not None
    assert _run(setup, operation.plan) == [{"count": first["count"]}]
    assert _operate(setup, "so how many PRs is that exactly?", [_turn(setup, "PRs opened in 2026")]) is None


def test_a_share_question_of_its_own_is_no_share_of_the_last_answer(setup):
    # "what fraction of his PRs got merged" says its part: planned as a question, not the last list in a wider base
    turn = _turn(setup, "which of Priya's PRs were not merged")
    assert _operate(setup, "so what fraction of her PRs got merged?", [turn]) is None
    assert _operate(setup, "what fraction of all PRs is that?", [turn]) is not None


def test_a_share_asked_over_the_last_records_is_over_them_without_its_part(setup):
    _, catalog, asker = setup
    unmerged = _plan(setup, "which of Priya's PRs were not merged").ir
    narrowed = narrowed_by(unmerged, "what fraction of PRs got merged", catalog, asker, NOW, None)
    assert narrowed is not None
    ir = narrowed[0]
    assert ir.shape.kind == "share" and [f.field for f in ir.shape.part] == ["merged"]
    assert "merged" not in {f.field for f in ir.filters}  # over all of her PRs, not the unmerged ones
    (row,) = _run(setup, as_operation(ir, base=ir, catalog=catalog, how="").plan)
    everyone = _all_of(setup, "Priya's PRs")
    merged = [r for r in everyone if r.get("merged")]
    assert row["share"] == pytest.approx(len(merged) / len(everyone))

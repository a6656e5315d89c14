"""Follow-ups applied to the last turn's plan IR (the sample tenant's data; the graph-level conversation is
in tests/assistant/test_conversation.py)."""

from dataclasses import replace
from datetime import datetime

import pytest

from context_engine.answering.followup import FollowUp, resolve_offline
from context_engine.answering.plan_ops import base_of, operate, without
from context_engine.config import Settings
from context_engine.query import engine
from context_engine.query.engine import principals_of
from context_engine.query.execute import run_pipeline
from context_engine.query.ir import Shape, SortKey
from context_engine.query.offline import OfflinePlanner
from context_engine.resources import catalog_for, store_for

NOW = datetime(2026, 11, 30, 12)


@pytest.fixture(scope="module")
def setup(sample_dir):
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)
    return settings, catalog, catalog.directory.asker("rsh-dev")


def _turn(setup, question, **more):
    """A finished turn that ran the offline plan of `question`."""
    _, catalog, asker = setup
    ctx, failed = engine.resolve(question, NOW, catalog, asker)
    assert failed is None
    plan = OfflinePlanner().plan(ctx)
    assert plan.ir is not None and plan.pipeline, question
    return {"standalone": question, "plan": {"ir": plan.ir.to_json()}, **more}


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


def _operate(setup, asked, turns, followup=None):
    _, catalog, asker = setup
    return operate(asked, followup or FollowUp(asked), turns, catalog, asker, NOW)


@pytest.mark.parametrize(
    "asked,order",
    [
        ("who authored the oldest of them?", 1),
        ("最早的那个是谁提的？", 1),
        ("and the newest one, who wrote it?", -1),
        ("这些 PRs 里最早的那个是谁开的？", 1),  # the last question's words said again: the same records
    ],
)
def test_the_person_of_one_record_at_an_end_of_the_last_records(setup, asked, order):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    records = _run(setup, _turn_plan(setup, "PRs opened in 2026"))
    one = sorted(records, key=lambda r: r["created_at"], reverse=order < 0)[0]
    rows = _run(setup, operation.plan)
    assert [r["_id"] for r in rows] == [one["user"]["login"]]
    assert operation.plan.person_field == ("user.login", "github")
    # what comes next builds on the records, not on the one picked
    assert operation.base.to_json() == base_of(turn).to_json()


def test_the_person_of_one_record_with_words_of_its_own_is_no_projection(setup):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, "who opened the earliest one about retries?", [turn])
    assert operation is None or "$group" not in str(operation.plan.pipeline if operation.plan else "")


def _turn_plan(setup, question):
    _, catalog, asker = setup
    ctx, _ = engine.resolve(question, NOW, catalog, asker)
    plan = OfflinePlanner().plan(ctx)
    plan.pipeline = [s for s in plan.pipeline if "$limit" not in s]
    return plan


@pytest.mark.parametrize("asked", ["who's behind it?", "谁提的"])
def test_the_person_of_the_one_record_the_last_answer_was(setup, asked):
    turn = _turn(setup, "which PR opened in 2026 has the most comments")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    (one,) = _run(setup, _turn_plan(setup, "which PR opened in 2026 has the most comments"))[:1]
    assert [r["_id"] for r in _run(setup, operation.plan)] == [one["user"]["login"]]


def test_a_person_of_a_record_with_words_of_its_own_is_not_a_projection(setup):
    turn = _turn(setup, "PRs opened in 2026")
    assert _operate(setup, "who opened the oldest one about payments in 2025?", [turn]) is None


def test_a_count_and_a_new_window_change_the_plan_itself(setup):
    turn = _turn(setup, "PRs Priya merged in October 2026")
    operation = _operate(
        setup, "and a month earlier, the number?", [turn], FollowUp("", new_time="in September 2026", reshape="count")
    )
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "count"
    assert [(t.field, t.start, t.end) for t in ir.times] == [("merged_at", datetime(2026, 9, 1), datetime(2026, 10, 1))]
    assert {f.field for f in ir.filters} == {f.field for f in base_of(turn).filters}  # Priya, merged: kept
    assert operation.base is ir  # the next follow-up builds on this plan


def test_a_narrowing_keeps_the_grouping_of_the_last_answer(setup):
    turn = _turn(setup, "who opened the most PRs in 2026")
    operation = _operate(setup, "of the open ones", [turn], FollowUp("", added="open"))
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "group" and ir.shape.field == base_of(turn).shape.field
    assert any(f.field == "state" and f.value == "open" for f in ir.filters)
    assert ir.times == base_of(turn).times


def test_a_ranking_of_people_after_one_persons_records_ranks_everyone(setup):
    # "who opened the most?" after Priya's count: a ranking of Priya alone would answer nothing
    turn = _turn(setup, "how many PRs did Priya open in 2026")
    operation = _operate(setup, "who opened the most that year?", [turn], FollowUp("", added="who opened the most"))
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "group" and ir.shape.field == "user.login"
    assert not any(f.field == "user.login" and f.op == "eq" for f in ir.filters), ir.filters
    assert ir.times == base_of(turn).times
    assert len(_run(setup, operation.plan)) > 1


def test_a_narrowing_that_says_its_own_shape_replaces_the_last_one(setup):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(
        setup, "which of the merged ones got the most comments", [turn], FollowUp("", added="merged most comments")
    )
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind != "list" or ir.shape.limit == 1
    assert any(f.field == "merged" for f in ir.filters) and ir.times == base_of(turn).times


def test_words_a_narrowing_cannot_read_are_said_as_not_understood(setup):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, "only the open blorptastic ones", [turn], FollowUp("", added="open blorptastic"))
    assert operation is not None
    assert any(f.field == "state" and f.value == "open" for f in operation.plan.ir.filters)
    assert [s["text"] for s in operation.plan.not_understood] == ["blorptastic"]


def test_a_narrowing_that_reads_nothing_is_left_to_the_rewritten_question(setup):
    turn = _turn(setup, "PRs opened in 2026")
    assert _operate(setup, "only the ones that, um", [turn], FollowUp("", added="that um")) is None


def _without(setup, asked, turns):
    """The follow-up `asked` as the graph applies it: its rest planned over the last turn, then the condition
    it takes away removed."""
    _, catalog, asker = setup
    followup = resolve_offline(asked, turns, catalog.directory, NOW)
    assert followup.dropped, asked
    rest = (followup.resumed or (len(turns), ""))[1]
    operation = operate(rest, followup, turns, catalog, asker, NOW) if rest else None
    return without(followup.dropped, operation, turns, catalog, asker, NOW, None, rest=rest)


@pytest.mark.parametrize("asked", ["forget the time limit", "不限时间", "drop the year", "不限月份的话"])
def test_a_condition_taken_away(setup, asked):
    turn = _turn(setup, "open PRs from 2026")
    operation = _without(setup, asked, [turn])
    assert operation is not None
    assert operation.plan.ir.times == [] and operation.plan.ir.filters == base_of(turn).filters


@pytest.mark.parametrize("asked", ["drop the bug label", "forget the label", "不管标签"])
def test_a_label_taken_away_keeps_the_rest(setup, asked):
    turn = _turn(setup, "open PRs labelled bug from 2026")
    operation = _without(setup, asked, [turn])
    assert operation is not None
    ir = operation.plan.ir
    assert all(f.field not in ("label", "labels.name") for f in ir.filters)
    assert any(f.field == "state" for f in ir.filters) and ir.times == base_of(turn).times


def test_that_is_the_condition_the_last_turn_added_and_the_rest_is_applied(setup):
    first = _turn(setup, "PRs opened in 2026")
    second = _turn(setup, "PRs opened in 2026 labelled bug")
    operation = _without(setup, "drop that — which of those are still open?", [first, second])
    assert operation is not None
    ir = operation.plan.ir
    assert all(f.field not in ("label", "labels.name") for f in ir.filters)
    assert any(f.field == "state" and f.value == "open" for f in ir.filters)
    assert ir.times == base_of(first).times


@pytest.mark.parametrize("asked", ["forget open or closed — how many are there?", "and all of them, open or not?"])
def test_a_state_taken_away_before_or_after_the_rest(setup, asked):
    turn = _turn(setup, "open PRs from 2026")
    operation = _without(setup, asked, [turn])
    assert operation is not None
    assert all(f.field != "state" for f in operation.plan.ir.filters)
    assert operation.plan.ir.times == base_of(turn).times


def test_a_condition_the_plan_does_not_have_is_not_taken_away(setup):
    turn = _turn(setup, "PRs opened in 2026")
    assert _without(setup, "drop the label", [turn]) is None


def test_a_state_taken_away(setup):
    turn = _turn(setup, "open PRs from 2026")
    operation = _operate(setup, "any state then", [turn])
    assert operation is not None
    assert all(f.field != "state" for f in operation.plan.ir.filters)
    assert operation.plan.ir.times == base_of(turn).times


def test_someone_s_records_of_the_last_plan_counted(setup):
    turn = _turn(setup, "PRs merged in October 2026", answer_people=["Lars Nielsen"])
    named = _operate(setup, "how many did Priya have in there?", [turn])
    pronoun = _operate(setup, "how many did they open among them", [turn])
    for operation, login in ((named, "priyar"), (pronoun, "larsn")):
        assert operation is not None
        ir = operation.plan.ir
        assert ir.shape.kind == "count" and ir.times == base_of(turn).times
        assert any(f.field == "user.login" and f.value == login for f in ir.filters)


def test_nothing_to_change_without_a_plan_before(setup):
    assert _operate(setup, "who opened the oldest one?", [{"standalone": "hello", "plan": {}}]) is None
    assert _operate(setup, "who opened the oldest one?", []) is None


@pytest.mark.parametrize("asked", ["when did the top one get merged?", "那第一个是什么时候合并的？"])
def test_the_date_of_the_first_record_of_the_last_answer(setup, asked):
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, asked, [turn])
    assert operation is not None
    (first,) = _run(setup, _turn_plan(setup, "PRs opened in 2026"))[:1]
    rows = _run(setup, operation.plan)
    assert [r["ref"] for r in rows] == [first["ref"]] and set(rows[0]) <= {"ref", "merged_at", "_id"}


def test_the_records_of_the_first_group_with_a_shape_of_their_own(setup):
    turn = _turn(setup, "PRs per repo in 2026")
    repo = _run(setup, _turn_plan(setup, "PRs per repo in 2026"))[0]["_id"]
    operation = _operate(
        setup,
        "in the biggest one, who opened the most?",
        [turn],
        FollowUp("", added="who opened the most", within=("repo", repo)),
    )
    assert operation is not None
    ir = operation.plan.ir
    assert any(f.field == "repo" and f.value == repo for f in ir.filters) and ir.times == base_of(turn).times
    assert ir.shape.kind == "group" and ir.shape.field == "user.login"


def test_a_question_restated_about_the_same_records_keeps_the_last_plan_s_other_conditions(setup):
    turn = _turn(setup, "who opened the most PRs in payments in 2026")
    restated = "how many PRs did Priya open in October 2026"
    operation = _operate(setup, "how many did that person open in October?", [turn], FollowUp("", restated=restated))
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "count"
    assert {(f.field, f.value) for f in ir.filters} >= {("repo", "acme/payments"), ("user.login", "priyar")}
    assert [(t.start, t.end) for t in ir.times] == [(datetime(2026, 10, 1), datetime(2026, 11, 1))]
    # about another kind of record, it is a question of its own
    other = FollowUp("", restated="how many issues did Priya file in October 2026")
    assert _operate(setup, "how many issues did that person file in October?", [turn], other) is None


def test_a_question_restated_after_one_record_is_a_question_of_its_own(setup):
    turn = _turn(setup, "which PR opened in 2026 has the most comments")
    restated = FollowUp("", restated="how many PRs did Priya open in 2026")
    assert _operate(setup, "how many did they open that year?", [turn], restated) is None


def test_another_kind_of_record_keeps_the_last_plan_s_person_and_window(setup):
    turn = _turn(setup, "PRs Priya merged in October 2026")
    operation = _operate(setup, "I meant issues", [turn], FollowUp("", collection="issues"))
    assert operation is not None
    ir = operation.plan.ir
    assert ir.collection == "issues" and operation.base is ir
    # the sample's issues are Jira's: Priya by her Jira account, in the reporter field
    priya = next(p for p in setup[1].directory.people if p.handle("github") == "priyar")
    assert priya.handle("jira")
    assert any(f.field == "fields.reporter.name" and f.value == priya.handle("jira") for f in ir.filters)
    assert all(f.field != "merged" for f in ir.filters)  # issues are not merged: dropped, and said
    assert "merged" in operation.how
    assert [(t.field, t.start) for t in ir.times] == [("fields.created", datetime(2026, 10, 1))]
    assert all(r["fields"]["reporter"]["name"] == priya.handle("jira") for r in _run(setup, operation.plan))


def test_another_kind_of_record_where_the_person_has_no_account_is_no_switch(setup):
    turn = _turn(setup, "PRs Priya merged in October 2026")
    # a login no one in the directory has: no account of theirs to look for among the Jira issues
    turn["plan"]["ir"]["filters"] = [
        {**f, "value": "someone-unlisted"} if f["field"] == "user.login" else f for f in turn["plan"]["ir"]["filters"]
    ]
    assert _operate(setup, "I meant issues", [turn], FollowUp("", collection="issues")) is None


def test_a_count_per_period_of_the_last_plan_s_date(setup):
    turn = _turn(setup, "how many PRs did Priya merge in 2026")
    operation = _operate(setup, "month by month", [turn], FollowUp("", reshape="month"))
    assert operation is not None
    shape = operation.plan.ir.shape
    assert (shape.kind, shape.field, shape.bucket) == ("group", "merged_at", "month")
    assert operation.plan.ir.filters == base_of(turn).filters


@pytest.mark.parametrize("asked", ["what about from anybody, not only her?", "by everyone then", "所有人的呢"])
def test_the_person_taken_away(setup, asked):
    turn = _turn(setup, "open PRs Priya opened in 2026")
    operation = _without(setup, asked, [turn])
    assert operation is not None
    ir = operation.plan.ir
    assert all(f.field != "user.login" for f in ir.filters) and any(f.field == "state" for f in ir.filters)
    assert ir.times == base_of(turn).times


@pytest.mark.parametrize("restated", ["how many PRs did Priya open overall in 2026", "Priya 2026 年一共开了几个 PR"])
def test_a_question_restated_in_total_is_not_narrowed_by_the_last_plan(setup, restated):
    turn = _turn(setup, "open PRs Priya opened in 2026")
    assert _operate(setup, restated, [turn], FollowUp("", restated=restated)) is None


@pytest.mark.parametrize("person,login", [("Lars", "larsn"), ("Lars Nielsen", "larsn")])
def test_the_same_plan_about_someone_else(setup, person, login):
    turn = _turn(setup, "PRs Priya merged in October 2026")
    operation = _operate(setup, f"and {person}?", [turn], FollowUp("", person=person))
    assert operation is not None
    ir, before = operation.plan.ir, base_of(turn)
    assert [(f.field, f.value) for f in ir.filters if f.field == "user.login"] == [("user.login", login)]
    assert {(f.field, str(f.value)) for f in ir.filters if f.field != "user.login"} == {
        (f.field, str(f.value)) for f in before.filters if f.field != "user.login"
    }
    assert ir.times == before.times and ir.shape == before.shape
    assert all(r["user"]["login"] == login for r in _run(setup, operation.plan))


def test_the_same_question_after_picking_the_record_with_the_most_is_that_pick_about_someone_else(setup):
    listed = _turn(setup, "PRs Priya opened in 2026")
    base = base_of(listed)
    picked = replace(base, shape=Shape("list", sort=[SortKey("comments", -1)], limit=1))
    turn = {**listed, "plan": {"ir": picked.to_json()}, "base": base.to_json()}
    operation = _operate(setup, "Lars 的呢？", [turn], FollowUp("", person="Lars"))
    assert operation is not None and operation.plan.ir.shape == picked.shape
    assert operation.base.shape == base.shape  # the next follow-up is about all of Lars's, as it was Priya's
    assert any(f.field == "user.login" and f.value == "larsn" for f in operation.plan.ir.filters)
    # with a shape of its own the follow-up builds on the records picked from: "Lars's, how many?"
    counted = _operate(setup, "Lars, how many?", [turn], FollowUp("", person="Lars", reshape="count"))
    assert counted is not None and counted.plan.ir.shape.kind == "count"


def test_a_bare_new_time_after_a_total_keeps_the_total(setup):
    listed = _turn(setup, "PRs Priya opened in 2026")
    base = base_of(listed)
    summed = replace(base, shape=Shape("sum", field="comments"))
    turn = {**listed, "plan": {"ir": summed.to_json()}, "base": base.to_json()}
    operation = _operate(setup, "2025?", [turn], FollowUp("", new_time="in 2025"))
    assert operation is not None and operation.plan.ir.shape == summed.shape
    assert [(t.start, t.end) for t in operation.plan.ir.times] == [(datetime(2025, 1, 1), datetime(2026, 1, 1))]


def test_the_same_plan_about_someone_else_in_a_new_window(setup):
    turn = _turn(setup, "how many PRs did Priya open in 2026")
    operation = _operate(setup, "Lars, the year before", [turn], FollowUp("", person="Lars", new_time="in 2025"))
    assert operation is not None
    ir = operation.plan.ir
    assert any(f.field == "user.login" and f.value == "larsn" for f in ir.filters) and ir.shape.kind == "count"
    assert [(t.start, t.end) for t in ir.times] == [(datetime(2025, 1, 1), datetime(2026, 1, 1))]


@pytest.mark.parametrize("person", ["Ottoline", "Priya"])
def test_no_switch_to_a_name_nobody_has_or_to_the_same_person(setup, person):
    # a name nobody has is left to the rewritten question, which is declined with candidates
    turn = _turn(setup, "PRs Priya merged in October 2026")
    assert _operate(setup, f"what about {person}?", [turn], FollowUp("", person=person)) is None


@pytest.mark.parametrize(
    "asked",
    [
        "how many comments did it get?",
        "and how many comments was that",
        "and how many comments did that PR get?",
        "它有多少评论",
        "它有几条评论",
    ],
)
def test_a_field_of_the_one_record_the_last_answer_was(setup, asked):
    turn = _turn(setup, "which PR opened in 2026 has the most comments")
    operation = _operate(setup, asked, [turn])
    assert operation is not None and operation.plan is not None
    (one,) = _run(setup, _turn_plan(setup, "which PR opened in 2026 has the most comments"))[:1]
    rows = _run(setup, operation.plan)
    assert [(r["ref"], r["comments"]) for r in rows] == [(one["ref"], one["comments"])]
    assert operation.base.to_json() == base_of(turn).to_json()


@pytest.mark.parametrize("asked,word", [("what severity was it given?", "severity"), ("what's its sprint", "sprint")])
def test_a_field_the_records_do_not_have_is_not_answered(setup, asked, word):
    turn = _turn(setup, "which PR opened in 2026 has the most comments")
    operation = _operate(setup, asked, [turn])
    assert operation is not None and operation.plan is None and operation.unanswerable == word


def test_a_field_of_one_record_needs_one_record(setup):
    turn = _turn(setup, "PRs opened in 2026")  # many records: which one's comments is not said
    assert _operate(setup, "how many comments did it get?", [turn]) is None


@pytest.mark.parametrize(
    "asked,index",
    [
        ("who opened the second one?", 1),
        ("第三条有多少评论", 2),
        ("第二个有多少条评论", 1),
        ("and the last one?", -1),
        ("how many comments does the fourth one have?", 3),
    ],
)
def test_a_record_of_the_last_answer_by_its_place(setup, asked, index):
    records = _run(setup, _turn_plan(setup, "PRs opened in 2026"))
    turn = _turn(setup, "PRs opened in 2026", refs=[r["ref"] for r in records[:20]])
    operation = _operate(setup, asked, [turn], FollowUp("", nth=index))
    assert operation is not None
    one = records[:20][index]
    rows = _run(setup, operation.plan)
    if asked.startswith("who"):
        assert [r["_id"] for r in rows] == [one["user"]["login"]]
    else:
        assert [r["ref"] for r in rows] == [one["ref"]]
    if "评论" in asked or "comments" in asked:
        assert rows[0]["comments"] == one["comments"] and "count" not in rows[0]
    assert operation.base.to_json() == base_of(turn).to_json()  # the next follow-up builds on the records


def test_a_topic_added_to_the_last_plan_as_the_planner_reads_one(setup):
    turn = _turn(setup, "how many PRs were opened in 2026")
    standalone = "PRs opened in 2026 about retries"
    alone = _turn_plan(setup, standalone)
    assert alone.ir is not None and (alone.ir.text or alone.ir.filters)
    followup = FollowUp(standalone, added="about retries", reshape="list")
    operation = _operate(setup, "any of those about retries?", [turn], followup)
    assert operation is not None
    ir = operation.plan.ir
    assert ir.text == alone.ir.text and all(f in ir.filters for f in alone.ir.filters)
    assert ir.times == base_of(turn).times and ir.shape.kind == "list"


def test_the_one_record_about_a_topic_and_a_field_of_it(setup):
    records = _run(setup, _turn_plan(setup, "PRs opened in 2026"))
    titled = next(r for r in records if len(r["title"].split()) >= 3)
    word = max(titled["title"].split(), key=len).strip(".,:;()").lower()
    turn = _turn(setup, "PRs opened in 2026")
    operation = _operate(setup, f"ok, the one on {word}: how many comments was that?", [turn])
    assert operation is not None and operation.plan is not None
    rows = _run(setup, operation.plan)
    assert len(rows) == 1 and set(rows[0]) <= {"_id", "ref", "comments"}
    (one,) = [r for r in records if r["ref"] == rows[0]["ref"]]
    assert word in one["title"].lower() and rows[0]["comments"] == one["comments"]
    assert operation.base.to_json() == base_of(turn).to_json()  # the next follow-up builds on the records


@pytest.mark.parametrize(
    "asked", ["how many replies did she get from others in total", "how many replies did Priya get?"]
)
def test_the_replies_a_person_got_after_who_replied_to_her_are_those_replies_counted(setup, asked):
    turn = _turn(setup, "who replied most to Priya?")
    operation = _operate(setup, asked, [turn])
    assert operation is not None and operation.plan.ir.shape.kind == "count"
    replies = _run(setup, _turn_plan(setup, "who replied most to Priya?"))
    (count,) = _run(setup, operation.plan)
    assert count["count"] == sum(r["count"] for r in replies) > 0  # every reply to her, by anyone else


def test_the_replies_someone_else_got_are_not_the_last_plans(setup):
    turn = _turn(setup, "who replied most to Priya?")
    operation = _operate(setup, "how many replies did Lars get?", [turn])
    assert operation is None or "replies to that person" not in operation.how


def test_who_replied_in_the_one_thread_the_most_ranks_its_replies_authors(tmp_path):
    from tests.query.conftest import hand_made_world

    def thread(i, user, repliers):
        return {
            "ref": f"C1:{i}",
            "channel": "general",
            "text": "t",
            "date": f"2026-03-0{i}T10:00:00Z",
            "user": user,
            "reply_count": len(repliers),
            "replies": [{"user": u, "ts": f"{i}.{n}"} for n, u in enumerate(repliers)],
        }

    messages = [thread(1, "U1", ["U2", "U3", "U3", "U1"]), thread(2, "U1", ["U2"]), thread(3, "U4", ["U2", "U2"])]
    store, catalog = hand_made_world(tmp_path, {"messages": messages}, [])
    ctx, _ = engine.resolve("which thread got the most replies", NOW, catalog, None)
    turn_plan = OfflinePlanner().plan(ctx)
    turn = {"standalone": "which thread got the most replies", "plan": {"ir": turn_plan.ir.to_json()}}
    operation = operate("who replied in it the most?", FollowUp(""), [turn], catalog, None, NOW)
    assert operation is not None and operation.plan.person_field == ("replies.user", "slack_id")
    schema = catalog.schemas["messages"]
    rows = run_pipeline(store, "messages", operation.plan.pipeline, tenant="t", principals=[], schema=schema)
    assert [(r["_id"], r["count"]) for r in rows] == [("U3", 2), ("U1", 1), ("U2", 1)]
    # the records before it were many: no one thread to look into
    many = {"standalone": "threads", "plan": {"ir": {**turn_plan.ir.to_json(), "shape": {"kind": "list"}}}}
    assert operate("who replied in it the most?", FollowUp(""), [many], catalog, None, NOW) is None


def test_a_value_said_instead_replaces_the_last_one_even_of_a_field_holding_several(setup):
    turn = _turn(setup, "how many issues labelled backend are open")
    operation = _operate(
        setup,
        "and with the frontend label instead?",
        [turn],
        FollowUp("", added="with the frontend label", replacing=True),
    )
    assert operation is not None
    labels = [f.value for f in operation.plan.ir.filters if "labels" in f.field]
    assert labels == ["frontend"]  # not backend and frontend at once
    also = _operate(setup, "and with the frontend label?", [turn], FollowUp("", added="with the frontend label"))
    assert sorted(f.value for f in also.plan.ir.filters if "labels" in f.field) == ["backend", "frontend"]


def test_a_narrowing_naming_a_value_nobody_has_is_declined_with_candidates(setup):
    turn = _turn(setup, "how many issues labelled backend are open")
    operation = _operate(setup, "and for the blorpish label?", [turn], FollowUp("", added="for the blorpish label"))
    assert operation is not None and operation.plan is None
    assert operation.declined is not None and operation.declined.unresolved == "blorpish"
    assert "label" in operation.declined.message


def test_a_condition_taken_away_before_a_question_of_its_own_keeps_the_rest_of_the_plan(setup):
    turn = _turn(setup, "open PRs labelled bug from 2026")
    operation = _without(setup, "drop the label — how many are there in 2026 overall?", [turn])
    assert operation is not None
    ir = operation.plan.ir
    assert ir.shape.kind == "count" and all(f.field not in ("label", "labels.name") for f in ir.filters)
    assert any(f.field == "state" for f in ir.filters)


def test_a_word_searched_for_said_back_takes_the_topic_away(setup):
    turn = _turn(setup, "PRs about flaky tests opened in 2026")
    assert any(f.op in ("words", "exact_words") for f in base_of(turn).filters) or base_of(turn).text
    operation = _without(setup, "drop the flaky part", [turn])
    assert operation is not None
    ir = operation.plan.ir
    assert not ir.text and all(f.op not in ("words", "exact_words") for f in ir.filters)
    assert ir.times == base_of(turn).times


def _issue(n, title, state, reason, comments, user, closer):
    return {
        "ref": f"a/b#{n}",
        "number": n,
        "title": title,
        "state": state,
        "state_reason": reason,
        "comments": comments,
        "created_at": f"2026-0{n % 9 + 1}-01T10:00:00Z",
        "user": {"login": user},
        "closed_by": {"login": closer} if closer else None,
    }


ISSUES = [
    _issue(1, "FileLock dependency breaks", "closed", "completed", 7, "ann", "bob"),
    _issue(2, "Add graph datasets", "open", None, 2, "ann", None),
    _issue(3, "Slow map", "closed", "not_planned", 4, "cid", "ann"),
    _issue(4, "Crash on load", "closed", "completed", 1, "ann", "cid"),
    _issue(5, "Docs typo", "open", None, 0, "bob", None),
    _issue(6, "Map hangs", "closed", "not_planned", 9, "ann", "bob"),
]


@pytest.fixture
def issues_world(tmp_path):
    from tests.query.conftest import hand_made_world

    store, catalog = hand_made_world(tmp_path, {"issues": ISSUES}, [])
    return store, catalog


def _ask(world, turns, asked, followup):
    store, catalog = world
    operation = operate(asked, followup, turns, catalog, None, NOW)
    if operation is None or operation.plan is None:
        return operation, None
    schema = catalog.schemas[operation.plan.collection]
    rows = run_pipeline(
        store, operation.plan.collection, operation.plan.pipeline, tenant="t", principals=[], schema=schema
    )
    return operation, rows


def _listed_turn(world, question="issues ann opened"):
    _, catalog = world
    ctx, _ = engine.resolve(question, NOW, catalog, None)
    plan = OfflinePlanner().plan(ctx)
    return {"standalone": question, "plan": {"ir": plan.ir.to_json()}, "refs": [i["ref"] for i in ISSUES]}


@pytest.mark.parametrize(
    "of_record,want",
    [
        ("how many comments has it got", [("a/b#1", 7)]),
        ("how many comments", [("a/b#1", 7)]),
        ("有几条评论", [("a/b#1", 7)]),
        ("的评论数", [("a/b#1", 7)]),
        ("评论多少", [("a/b#1", 7)]),
        ("how many comments on it", [("a/b#1", 7)]),
        ("what number is it", [("a/b#1", 1)]),
        ("是几号", [("a/b#1", 1)]),
        ("编号是多少", [("a/b#1", 1)]),
    ],
)
def test_a_field_of_the_record_a_follow_up_names(issues_world, of_record, want):
    turn = _listed_turn(issues_world)
    operation, rows = _ask(issues_world, [turn], "", FollowUp("", record="a/b#1", of_record=of_record))
    assert [(r["ref"], next(v for k, v in r.items() if k not in ("ref", "_id"))) for r in rows] == want
    assert operation.base.to_json() == base_of(turn).to_json()  # the next follow-up builds on the list


@pytest.mark.parametrize(
    "of_record,key",
    [("现在是开着还是关了", "closed"), ("is it still open?", "closed"), ("是谁关的", "bob"), ("who opened it", "ann")],
)
def test_a_value_of_the_record_a_follow_up_names_is_its_one_group(issues_world, of_record, key):
    turn = _listed_turn(issues_world)
    _, rows = _ask(issues_world, [turn], "", FollowUp("", record="a/b#1", of_record=of_record))
    assert [r["_id"] for r in rows] == [key]


def test_a_number_said_is_that_record_even_if_the_last_answer_did_not_list_it(issues_world):
    turn = _listed_turn(issues_world, "issues bob opened")
    _, rows = _ask(issues_world, [turn], "", FollowUp("", record="a/b#6", of_record="how many comments"))
    assert [(r["ref"], r["comments"]) for r in rows] == [("a/b#6", 9)]


def test_words_that_name_no_listed_record_are_declined(issues_world):
    turn = _listed_turn(issues_world)
    operation, _ = _ask(issues_world, [turn], "", FollowUp("", unnamed=("parquet", "None of them says 'parquet'")))
    assert operation.plan is None and operation.unanswerable == "parquet" and "None of them" in operation.refusal


def test_words_said_of_a_named_record_that_no_rule_reads_are_said_so(issues_world):
    turn = _listed_turn(issues_world)
    operation, rows = _ask(issues_world, [turn], "", FollowUp("", record="a/b#1", of_record="does it rhyme"))
    assert [r["ref"] for r in rows] == ["a/b#1"] and operation.plan.not_understood


def test_why_one_issue_was_closed_is_its_close_reason(issues_world):
    _, catalog = issues_world
    ctx, _ = engine.resolve("which issue has the most comments", NOW, catalog, None)
    one = OfflinePlanner().plan(ctx)
    turn = {"standalone": "which issue has the most comments", "plan": {"ir": one.ir.to_json()}}
    _, rows = _ask(issues_world, [turn], "它为什么被关掉了", FollowUp(""))
    assert [r["_id"] for r in rows] == ["not_planned"]  # a/b#6: 9 comments


@pytest.mark.parametrize(
    "asked,word",
    [
        ("why were they closed like that?", "why"),
        ("how come so many that month?", "how come"),
        ("为什么她发得这么少？", "为什么"),
        ("ok, why's that?", "why"),
        ("what's the reason they stayed open?", "what's the reason"),
        ("她怎么这么少", "怎么这么"),
    ],
)
def test_why_is_declined_where_no_record_says_it(issues_world, asked, word):
    turn = _listed_turn(issues_world)
    operation, _ = _ask(issues_world, [turn], asked, FollowUp(""))
    assert operation is not None and operation.plan is None and operation.unanswerable == word and operation.refusal


def test_a_why_question_about_no_earlier_answer_is_not_declined(issues_world):
    turn = _listed_turn(issues_world)
    assert _ask(issues_world, [turn], "why did we switch to Redis?", FollowUp(""))[0] is None


def test_it_after_a_named_record_is_that_record(issues_world):
    listed = _listed_turn(issues_world)
    named, _ = _ask(issues_world, [listed], "", FollowUp("", record="a/b#3", of_record="how many comments"))
    picked = {
        "standalone": "how many comments has issue a/b#3",
        "plan": named.plan.to_json(),
        "base": named.base.to_json(),
        "listed": {"standalone": listed["standalone"]},
        "refs": ["a/b#3"],
    }
    _, rows = _ask(issues_world, [listed, picked], "who closed it?", FollowUp(""))
    assert [r["_id"] for r in rows] == ["ann"]


@pytest.mark.parametrize("asked", ["whose thread was that?", "whose message was it?"])
def test_whose_record_that_was_is_its_author(tmp_path, asked):
    from tests.query.conftest import hand_made_world

    messages = [
        {"ref": f"C1:{i}", "text": "t", "date": f"2026-03-0{i}T10:00:00Z", "user": f"U{i}", "reply_count": i}
        for i in range(1, 7)
    ]
    store, catalog = hand_made_world(tmp_path, {"messages": messages}, [])
    ctx, _ = engine.resolve("which thread got the most replies", NOW, catalog, None)
    turn = {"standalone": "which thread got the most replies", "plan": {"ir": OfflinePlanner().plan(ctx).ir.to_json()}}
    operation = operate(asked, FollowUp(""), [turn], catalog, None, NOW)
    schema = catalog.schemas["messages"]
    rows = run_pipeline(store, "messages", operation.plan.pipeline, tenant="t", principals=[], schema=schema)
    assert [r["_id"] for r in rows] == ["U6"]

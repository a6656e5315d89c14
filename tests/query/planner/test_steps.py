"""The offline planner's steps one by one (query/planner/), and the spans of the question a plan reads.

Each step runs on a draft of its own over the sample organisation's catalog, so a step's test fails
for that step's reasons only."""

from __future__ import annotations

import pytest

from context_engine.query.answer import compose
from context_engine.query.engine import Success
from context_engine.query.ir import Filter, PlanIR, Shape
from context_engine.query.offline import OfflinePlanner, _Builder
from context_engine.query.plan import Plan
from context_engine.query.planner.collection import detect_collection
from tests.query.conftest import context


def draft(catalog, question, collection):
    """A builder positioned after step 1 (the collection is chosen), for the later steps alone."""
    b = _Builder(context(catalog, question))
    b.collection, b.schema = collection, catalog.schemas[collection]
    b.collection_spans = detect_collection(question, catalog.schemas)[1]
    return b


def conditions(b) -> list[tuple[str, str, object]]:
    return [(f.field, f.op, f.value) for f in b.filters]


@pytest.mark.parametrize(
    "question,collection",
    [
        ("bug PRs merged last week", "pull_requests"),  # "bug" describes the PRs
        ("PRs that fix bugs", "pull_requests"),  # the first collection word wins
        ("threads in #general with replies", "messages"),
        ("上周合并了哪些PR？", "pull_requests"),
        ("what is the meaning of life", None),
        ("张伟在 2021 年提交了哪些 issue？", "issues"),  # 提交 (submitted) before the record noun is the verb
    ],
)
def test_collection_step(catalog, question, collection):
    assert detect_collection(question, catalog.schemas)[0] == collection


def test_linking_step_links_stored_values_and_people_in_their_roles(catalog):
    b = draft(catalog, "PRs in acme/payments with the bug label reviewed by Alex Chen", "pull_requests")
    b._values()
    b._people()
    assert ("repo", "eq", "acme/payments") in conditions(b)
    assert ("labels.name", "eq", "bug") in conditions(b)
    assert [f for f in b.filters if f.field == "reviews.user.login"]  # the reviewer role, not the author
    assert not [f for f in b.filters if f.field == "user.login"]
    person = next(f for f in b.filters if f.field == "reviews.user.login")
    assert b.q[person.span[0] : person.span[1]] == "Alex Chen"  # each element records its words


@pytest.mark.parametrize(
    "question,collection,expected",
    [
        ("merged PRs", "pull_requests", [("merged", "eq", True)]),
        ("non-draft PRs", "pull_requests", [("draft", "eq", False)]),
        ("PRs that didn't make it in", "pull_requests", [("merged", "eq", False)]),  # the idiom, negated
        ("PRs that made it in", "pull_requests", [("merged", "eq", True)]),
        ("which of his PRs didn't make it?", "pull_requests", [("merged", "eq", False)]),  # "make it" = merged
        ("which PRs made it?", "pull_requests", [("merged", "eq", True)]),
        ("PRs without reviews", "pull_requests", [("reviews", "empty", None)]),
        ("threads with more than 5 replies", "messages", [("reply_count", "gt", 5)]),
        ("留言超過 2 則的 PR", "pull_requests", [("comments", "gt", 2)]),  # 留言: a PR's comments
        ("有几条消息有人回", "messages", [("reply_count", "gte", 1)]),  # 有人回: someone replied
        ("有几条消息被回复了 10 次以上", "messages", [("reply_count", "gte", 10)]),  # a bound after the number
        ("5 条以下评论的 PR", "pull_requests", [("comments", "lte", 5)]),
        ("至少 3 則留言的 PR", "pull_requests", [("comments", "gte", 3)]),
        ("tickets not done yet", "issues", [("fields.status.name", "nin", ["Done", "Won't Do"])]),
    ],
)
def test_conditions_step(catalog, question, collection, expected):
    b = draft(catalog, question, collection)
    b._states()
    b._thresholds()
    assert conditions(b) == expected


def test_conditions_step_dates_a_time_range_by_its_verb(catalog):
    b = draft(catalog, "PRs merged since October", "pull_requests")
    b._times(b._states())
    (rng,) = b.times
    assert rng.field == "merged_at" and rng.end is None  # open-ended: since October, no end
    assert b.q[rng.span[0] : rng.span[1]].lower().startswith("since")


@pytest.mark.parametrize(
    "question,expected",
    [
        ("PRs merged per week", (None, "week")),
        ("open PRs grouped by repo", ("repo", None)),
        ("PRs by label", ("label", None)),
        ("PRs merged last week", (None, None)),
    ],
)
def test_shape_step_groups_and_buckets(catalog, question, expected):
    assert draft(catalog, question, "pull_requests")._grouping() == expected


def test_shape_step_limits(catalog):
    assert draft(catalog, "the last 3 PRs", "pull_requests")._list_limit() == 3
    b = draft(catalog, "top three reviewers", "pull_requests")
    assert b._top_limit(__import__("re").search("top", b.q)) == 3


def test_the_plan_carries_its_ir_and_the_pipeline_compiled_from_it(catalog):
    plan = OfflinePlanner().plan(context(catalog, "how many open PRs are there?"))
    assert plan.ir == PlanIR(
        "pull_requests",
        filters=[Filter("state", "eq", "open", span=plan.ir.filters[0].span)],
        shape=Shape("count", span=(0, 8)),
    )  # "how many"
    assert plan.pipeline == [{"$match": {"state": "open"}}, {"$count": "count"}]


def test_words_the_plan_does_not_read_are_not_understood(catalog):
    """Issue 27: "open PRs by Nobody Atall" answered every open PR. A name is now declined before planning
    (tests/query/test_unresolved_names.py); any other words the plan does not read are said, not dropped."""
    plan = OfflinePlanner().plan(context(catalog, "open PRs with a purple hat"))
    assert [(s["text"], s["start"], s["end"]) for s in plan.not_understood] == [("purple hat", 16, 26)]
    assert plan.confidence < 0.7  # below CONFIDENT: a chat model, when configured, gets the question
    hows = {s["text"]: s["how"] for s in plan.understood}
    assert hows["PRs"] == "collection" and hows["open"] == "value"


def test_every_content_word_of_a_plan_that_reads_the_whole_question_is_understood(catalog):
    plan = OfflinePlanner().plan(context(catalog, "How many PRs did Alex Chen merge last week?"))
    assert plan.not_understood == []
    hows = {s["text"]: s["how"] for s in plan.understood}
    assert hows["Alex Chen"] == "person" and hows["last week"] == "time" and hows["How many"] == "shape"
    assert plan.ir.shape.span == (0, 8)


def test_topic_words_are_understood_as_topic(catalog):
    plan = OfflinePlanner().plan(context(catalog, "open PRs about redis caching"))
    assert plan.not_understood == []
    assert {s["text"] for s in plan.understood if s["how"] == "topic"} == {"about", "redis", "caching"}
    # the words are conditions on the title, each required; the topic's span is still the question's
    assert plan.ir.text == [] and plan.ir.text_span == (9, 28)
    assert [(f.field, f.op, f.value) for f in plan.ir.filters if "words" in f.op] == [
        ("title", "exact_words", ["redis"]),
        ("title", "words", ["caching"]),
    ]


def test_chinese_content_not_understood_is_reported(catalog):
    plan = OfflinePlanner().plan(context(catalog, "上周合并的PR里哪些改了火箭引擎？"))
    assert any("火箭引擎" in s["text"] for s in plan.not_understood)


def test_the_answer_names_what_it_ignored(catalog):
    plan = Plan(
        "pull_requests", [], not_understood=[{"text": "Nobody Atall", "start": 12, "end": 24, "how": "unknown"}]
    )
    text, _ = compose(Success(plan, [{"count": 92}], []), "pull_requests")
    assert text.splitlines() == [
        "92 pull requests match.",
        "I did not understand: 'Nobody Atall' — the answer ignores it.",
    ]
    plan.not_understood = []
    assert compose(Success(plan, [{"count": 92}], []), "pull_requests")[0] == "92 pull requests match."


def test_a_sum_or_an_extreme_of_a_measure_is_answered_as_one_number():
    plan = Plan("messages", [])
    assert compose(Success(plan, [{"total": 412}], []), "messages")[0] == "The total over the messages matched: 412."
    assert compose(Success(plan, [{"max": 9}], []), "pull_requests")[0] == "The max over the pull requests matched: 9."


def test_plan_json_round_trip_keeps_ir_and_spans_and_old_json_reads_as_empty():
    plan = Plan(
        "issues",
        [{"$match": {"state": "open"}}],
        ir=PlanIR("issues", filters=[Filter("state", "eq", "open")]),
        understood=[{"text": "open", "start": 0, "end": 4, "how": "value"}],
        not_understood=[{"text": "xyz", "start": 5, "end": 8, "how": "unknown"}],
    )
    assert Plan.from_json(plan.to_json()) == plan
    old = Plan.from_json({"collection": "issues", "pipeline": []})
    assert (old.ir, old.understood, old.not_understood) == (None, [], [])


def test_a_field_word_is_understood_only_when_the_plan_uses_that_field(catalog):
    """ "milestone v2.3" names the field of a condition; "without a milestone" is its absence, read
    as a condition too (query/planner/conditions.py), so nothing is left unread."""
    assert OfflinePlanner().plan(context(catalog, "open PRs in milestone v2.3")).not_understood == []
    plan = OfflinePlanner().plan(context(catalog, "open PRs without a milestone"))
    assert plan.not_understood == [] and [(f.field, f.op) for f in plan.ir.filters if f.field == "milestone.title"] == [
        ("milestone.title", "empty")
    ]


@pytest.mark.parametrize(
    "condition,turned",
    [
        (Filter("labels.name", "eq", "bug"), True),  # the "not" dropped: the opposite question
        (Filter("labels", "not_empty"), True),
        (Filter("labels.name", "eq", "bug", negate=True), False),  # excluded: what the words say
        (Filter("labels", "empty"), False),
        (Filter("comments", "in", [0, None]), False),  # a zero count
        (Filter("merged", "eq", False), False),  # a state picked by the negation
        (Filter("state", "eq", "open"), False),
        (Filter("labels.name", "eq", "doesn't matter"), False),  # the value says the negation itself
    ],
)
def test_a_condition_that_drops_a_negation_it_consumed_is_said(catalog, condition, turned):
    question = "PRs that don't have the bug label"
    b = draft(catalog, question, "pull_requests")
    condition.span = (9, len(question))
    b.filters = [condition]
    assert b._negation_read_as_positive() == ([(9, len(question))] if turned else [])


def test_the_answer_says_a_negation_may_have_been_read_the_wrong_way_round():
    plan = Plan(
        "pull_requests",
        [],
        not_understood=[{"text": "don't have the bug label", "start": 9, "end": 33, "how": "negation"}],
    )
    text, _ = compose(Success(plan, [{"count": 12}], []), "pull_requests")
    assert text.splitlines()[1] == (
        "I may have read 'don't have the bug label' the wrong way round: the query shown "
        "asks for what the words say is not there."
    )

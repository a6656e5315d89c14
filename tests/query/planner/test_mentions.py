"""Mentions as people, lengths, empty days and threads ranked by replies, planned offline and run on a
hand-made Slack world: whom someone @-mentions, the people mentioned most, someone's messages that tag
another, messages mentioning two or more people, long messages, days without a message, the threads
with the most replies. The phrasings are this file's own."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.query.answer import compose
from context_engine.query.engine import Success, refused_names, resolve, with_display_names
from context_engine.query.execute import run_pipeline
from context_engine.query.offline import OfflinePlanner
from tests.query.conftest import hand_made_world

NOW = datetime(2019, 7, 1, 12)


def _msg(ref, user, day, *, mentions=(), text="hi", replies=0, workspace="w"):
    doc = {
        "ref": ref,
        "user": user,
        "date": datetime(2019, 3, day, 10),
        "text": text,
        "mentions": list(mentions),
        "workspace": workspace,
    }
    if replies:
        doc.update(reply_count=replies, thread_ts=f"{ref}.0", reply_users=["UC"], reply_users_count=1)
    return doc


MESSAGES = [
    _msg("m1", "UA", 1, mentions=["UB"], replies=4),
    _msg("m2", "UA", 1, mentions=["UB", "UC"], text="x" * 120),
    _msg("m3", "UA", 2, mentions=["UB"], replies=9),
    _msg("m4", "UA", 4, mentions=["UC"]),
    _msg("m5", "UB", 4, mentions=["UC", "UA", "UD"], text="y" * 60, replies=2),
    _msg("m6", "UC", 9, replies=1, workspace="v"),
    _msg("m7", "UD", 9, mentions=["UC"], workspace="v"),
]
PEOPLE = [
    {"slack_id": "UA", "name": "Ana Ortiz"},
    {"slack_id": "UB", "name": "Ben Kowal"},
    {"slack_id": "UC", "name": "Cy Delgado"},
    {"slack_id": "UD", "name": "Dee Marsh"},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return hand_made_world(tmp_path_factory.mktemp("mentions"), {"messages": MESSAGES}, PEOPLE)


def answer(world, question: str):
    store, catalog = world
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None, failed
    plan = OfflinePlanner().plan(ctx)
    assert not plan.not_understood, plan.not_understood
    rows = run_pipeline(
        store, plan.collection, plan.pipeline, tenant="t", principals=["*"], schema=catalog.schemas[plan.collection]
    )
    return rows, plan


@pytest.mark.parametrize(
    "question,first",
    [
        ("whom does Ana tag most often?", ("UB", 3)),
        ("if Ana pings somebody, who is it usually?", ("UB", 3)),
        ("Ana 最常 @ 谁？", ("UB", 3)),
        ("who is mentioned the most?", ("UC", 4)),
        ("the most-mentioned people, top 2", ("UC", 4)),
    ],
)
def test_the_people_mentioned_are_ranked_not_their_authors(world, question, first):
    rows, plan = answer(world, question)
    assert plan.ir.shape.kind == "group" and plan.ir.shape.field == "mentions"
    assert (rows[0]["_id"], rows[0]["count"]) == first


def test_the_mentioned_are_named_from_the_directory(world):
    _, catalog = world
    rows, plan = answer(world, "who gets pinged the most?")
    named = with_display_names(rows, plan, catalog.directory)
    text, _ = compose(Success(plan, named, []), "messages")
    assert "1. Cy Delgado (UC): 4" in text


@pytest.mark.parametrize(
    "question,expected",
    [
        ("how many times has Ana tagged Cy?", 2),  # m2, m4
        ("number of messages carrying mentions of three or more people", 1),  # m5
        ("how many messages tag at least 2 people?", 2),  # m2, m5
        ("how many messages are longer than 100 characters?", 1),  # m2
        ("count the posts over 50 chars", 2),  # m2, m5
        ("how many days in March 2019 had no messages?", 27),  # messages on the 1st, 2nd, 4th and 9th
        ("2019 年 3 月有几天一条消息都没有？", 27),
    ],
)
def test_counts(world, question, expected):
    rows, _ = answer(world, question)
    assert len(rows) == 1 and rows[0]["count"] == expected, rows


@pytest.mark.parametrize(
    "question",
    [
        "the 2 threads with the biggest reply counts",
        "top 2 threads by number of replies",
        "回复最多的两个讨论串是哪几个？",
    ],
)
def test_threads_ranked_by_their_replies(world, question):
    rows, _ = answer(world, question)
    assert [r["ref"] for r in rows] == ["m3", "m1"]


@pytest.mark.parametrize(
    "question,percent",
    [
        ("what percentage of messages in March 2019 mentioned someone?", 600 / 7),  # all but m6
        ("2019 年 3 月的消息裡，有 @ 別人的佔百分之幾？", 600 / 7),
    ],
)
def test_the_share_of_messages_with_mentions(world, question, percent):
    """The messages that mention someone (their list of mentions not empty) as a share of all of them."""
    rows, plan = answer(world, question)
    assert plan.ir.shape.kind == "share" and plan.ir.shape.percent, plan.pipeline
    assert rows == [{"percent": pytest.approx(percent)}], plan.pipeline


def test_each_workspace_counted_in_chinese(world):
    rows, _ = answer(world, "每个 workspace 各开了多少个讨论串？")
    assert {(r["_id"], r["count"]) for r in rows} == {("w", 3), ("v", 1)}


def test_the_empty_days_answer_says_its_reading(world):
    rows, plan = answer(world, "how many days in March 2019 saw no messages at all?")
    text, _ = compose(Success(plan, rows, []), "messages")
    assert text.startswith("27 of the 31 days of the time asked had no message")


# A tenant whose messages store no mentions, beside pull requests: "who mentions Ben" can be read neither way.
PULLS = [
    {"ref": "r#1", "user": {"login": "ben"}, "title": "fix", "created_at": datetime(2019, 3, 2), "state": "open"},
    {"ref": "r#2", "user": {"login": "ana"}, "title": "add", "created_at": datetime(2019, 3, 3), "state": "open"},
]
PLAIN_MESSAGES = [{k: v for k, v in m.items() if k != "mentions"} for m in MESSAGES]


@pytest.fixture(scope="module")
def unmentioned(tmp_path_factory):
    people = [{**p, "github": login} for p, login in zip(PEOPLE, ("ana", "ben", "cy", "dee"), strict=True)]
    return hand_made_world(
        tmp_path_factory.mktemp("unmentioned"), {"pull_requests": PULLS, "messages": PLAIN_MESSAGES}, people
    )


@pytest.mark.parametrize("question", ["who mentions Ben the most?", "who pings Ben most often in slack?"])
def test_a_mention_nothing_stores_is_declined_not_read_as_the_author(unmentioned, question):
    _, catalog = unmentioned
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None, failed
    plan = OfflinePlanner().plan(ctx)
    refused = refused_names(plan, ctx, None)
    assert refused is not None and "do not record who is mentioned" in refused.message, (plan.ir, refused)
    assert "Ben" in refused.message


def test_the_records_that_store_mentions_are_guessed(tmp_path_factory):
    _, catalog = hand_made_world(
        tmp_path_factory.mktemp("both"),
        {"pull_requests": PULLS, "messages": MESSAGES},
        [{**p, "github": login} for p, login in zip(PEOPLE, ("ana", "ben", "cy", "dee"), strict=True)],
    )
    ctx, _ = resolve("who mentions Ben the most?", NOW, catalog, None)
    plan = OfflinePlanner().plan(ctx)
    assert plan.collection == "messages" and plan.ir is not None
    assert [(f.field, f.value) for f in plan.ir.filters] == [("mentions", "UB")]

"""Threads and replies said in people's own words, planned offline and run on a hand-made Slack world:
who answered in someone's threads, replies outside one's own threads, threads someone took no part
in, upper bounds on replies, top-level posts. The phrasings are this file's own."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.query.engine import resolve
from context_engine.query.execute import run_pipeline
from context_engine.query.offline import OfflinePlanner
from tests.query.conftest import hand_made_world

NOW = datetime(2019, 7, 1, 12)
D = datetime


def _msg(ref, user, day, *, parent=None, replies=None, repliers=(), mentions=(), text="hi"):
    """A Slack message: a thread's start carries reply_count, reply_users and thread_ts; a reply carries
    thread_ts and its starter's id (parent_user_id); a message on its own carries neither."""
    doc = {
        "ref": ref,
        "user": user,
        "date": D(2019, 3, day),
        "text": text,
        "mentions": list(mentions),
        "workspace": "w",
    }
    if replies:
        doc.update(
            reply_count=replies, reply_users=list(repliers), reply_users_count=len(repliers), thread_ts=f"{ref}.0"
        )
    if parent:
        doc.update(parent_user_id=parent, thread_ts="t.0")
    return doc


MESSAGES = [
    _msg("a1", "UA", 1, replies=3, repliers=["UB", "UC"], text="websockets in elm"),  # Ana's thread: Ben, Cy
    _msg("b1", "UB", 2, parent="UA"),
    _msg("c1", "UC", 3, parent="UA"),
    _msg("b2", "UB", 4, parent="UA"),
    _msg("a2", "UA", 5, replies=1, repliers=["UA"], text="the REPL hangs"),  # Ana answers herself
    _msg("a3", "UA", 6, parent="UA"),
    _msg("b3", "UB", 7, replies=2, repliers=["UA", "UC"], text="decoders"),  # Ben's thread: Ana, Cy
    _msg("a4", "UA", 8, parent="UB"),
    _msg("c2", "UC", 9, parent="UB"),
    _msg("c3", "UC", 10, replies=5, repliers=["UB"], text="ports"),  # Cy's thread: Ben only
    _msg("b4", "UB", 11, parent="UC"),
    _msg("a5", "UA", 12, mentions=["UB"], text="websockets again"),  # on its own
    _msg("c4", "UC", 13, text="the repl"),  # on its own
]
PEOPLE = [
    {"slack_id": "UA", "name": "Ana Ortiz"},
    {"slack_id": "UB", "name": "Ben Kowal"},
    {"slack_id": "UC", "name": "Cy Delgado"},
    {"slack_id": "UV", "name": "Valentin"},  # one letter from "Valentine's Day"
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return hand_made_world(tmp_path_factory.mktemp("threads"), {"messages": MESSAGES}, PEOPLE)


def answer(world, question: str, asker: str | None = None):
    store, catalog = world
    person = next(p for p in catalog.directory.people if p.handle("slack_id") == asker) if asker else None
    ctx, failed = resolve(question, NOW, catalog, person)
    assert failed is None, failed
    plan = OfflinePlanner().plan(ctx)
    rows = run_pipeline(
        store, plan.collection, plan.pipeline, tenant="t", principals=["*"], schema=catalog.schemas[plan.collection]
    )
    return rows, plan


def refs(rows):
    return sorted(r["ref"] for r in rows)


@pytest.mark.parametrize(
    "question,expected",
    [
        # an upper bound on replies said with a negation: at most, not "more than"
        ("How many of Cy's threads got no more than two replies?", 0),
        ("Ana's threads that didn't get past 2 replies — how many?", 1),
        ("how many threads by Ben with at most 2 replies", 1),
        # a message that answers no one, in other words
        ("how many top-level posts never got a single reply?", 2),
        ("how many non-reply messages without any mentions are there?", 5),
        ("有多少条顶层消息没有任何人回复？", 2),
        # "how often did X come up": a count of the messages about it
        ("How often did websockets come up (messages)?", 2),
        # absence and presence said in other words
        ("How many of Ana's messages were neither replies nor mentioned anyone?", 2),  # a1, a2
        ("Ana 有多少条消息不属于任何讨论串？", 1),  # a5
        ("count of non-threaded messages", 2),  # a5, c4
        ("messages that @mention someone but are not replies, how many?", 1),  # a5
        ("有提到别人但本身不是回复的消息有多少条？", 1),
        # how many different people replied to a thread
        ("how many threads had no more than one person replying?", 2),  # a2, c3
        ("threads where only a single person replied — how many?", 2),  # a2, c3
        ("how many of Ana's messages got any replies?", 2),  # a1, a2
        # the replies someone got: replies in their threads, by others
        ("how many replies did Ana get?", 3),  # b1, c1, b2
        ("how many answers has Ben received?", 2),  # a4, c2
        # mentions and replies said in other words
        ("how many messages tag nobody?", 12),  # all but a5
        ("how many of Ana's messages were posted rather than as a thread reply?", 3),  # a1, a2, a5
        # a name joined to its verb by a hyphen is the starter
        ("Ana-started threads with at least one reply from Cy — count", 1),  # a1
        # left hanging: no replies, said twice
        ("how many of Ana's messages were left hanging — not in a thread, nobody replied?", 1),  # a5
        # "@-ed" is mentioning: the distinct authors of the messages that mention Ben (a5)
        ("number of unique people who @-ed Ben", 1),
        # words the plan reads without a span of their own
        ("how many threads drew at least two different people?", 2),  # a1, b3
        ("Ana's replies under other people's threads, how many", 1),  # a4
        ("how many messages from everyone except Ana and Ben?", 4),  # c1, c2, c3, c4
        # every message, replies with the rest: no condition, and "incl" is no topic
        ("how many msgs did Ana post incl replies", 5),
        ("how many messages did Ana post, replies included?", 5),
        # no reply got and none itself: a5 (a1 and a2 got replies, a3 and a4 are replies)
        ("how many times did Ana post something that got no reply at all and wasn't itself a reply?", 1),
        ("Ana: replies in someone else's thread, count", 1),  # a4, in Ben's thread
        ("how many replies has Ana written in threads other people started?", 1),
        # someone's replies are the records: not every message of theirs
        ("how many of Ana's replies mention nobody?", 2),  # a3, a4
        ("count the replies by Ben", 3),  # b1, b2, b4
        ("how many replies did Ana write?", 2),  # a3, a4: hers that answer a thread
        ("ana thread replies, count", 2),
        # a bound said after the number, with its inclusion said again in brackets
        ("回复数达到 3 条以上（含 3 条）的讨论串有几个？", 2),  # a1, c3
        ("回复数达到 2 条的讨论串有几个", 3),  # a1, b3, c3
        # a reply said to come from the thread's own starter is among its repliers
        ("how many of Ana's threads didn't get a single reply from Ana", 1),  # a1
        ("how many of Ana's threads got a reply from Ana", 1),  # a2
        ("how many of Ana's threads never received any answer from Cy", 1),  # a2
        # the people someone replied to are others: Ana answering her own thread (a3) is no one else
        ("to how many distinct people has Ana written replies?", 1),  # Ben (a4)
        ("Ana 回复过几个不同的人？", 1),
        ("number of distinct people whose threads Ana answered in", 1),  # Ben's (a4), not her own (a3)
        ("how many different people replied to Ana", 2),  # Ben, Cy; never herself
        # the records are replies: "that are replies", "多少条回复"
        ("how many messages are replies?", 7),
        ("2019 年 3 月有多少条回复？", 7),
    ],
)
def test_counts_said_in_other_words(world, question, expected):
    rows, plan = answer(world, question)
    assert rows == [{"count": expected}], plan.pipeline
    assert plan.not_understood == [], plan.not_understood


@pytest.mark.parametrize("question", ["reply counts broken down by user", "每个人各有多少条回复？"])
def test_reply_counts_per_group_count_the_replies(world, question):
    rows, plan = answer(world, question)
    assert {r["_id"]: r["count"] for r in rows} == {"UA": 2, "UB": 3, "UC": 2}, plan.pipeline


def test_the_share_of_messages_that_are_replies(world):
    _, plan = answer(world, "share of messages that are replies, as a %")
    assert plan.ir.shape.kind == "share" and plan.ir.shape.percent and plan.not_understood == []
    assert [(f.field, f.op) for f in plan.ir.shape.part] == [("parent_user_id", "exists")]


def test_who_answered_in_the_threads_someone_started(world):
    # replies whose thread Ana started, by others than Ana: Ben twice, Cy once
    for question in (
        "in threads Ana started, who answered her most often?",
        "Which person answered most often in the threads I started?",
        "who answers Ana the most in her threads?",  # answering someone, said without "to"
    ):
        rows, plan = answer(world, question, asker="UA")
        assert rows[0] == {"_id": "UB", "count": 2}, plan.pipeline
        assert plan.not_understood == []


def test_distinct_repliers_to_someone_not_counting_themselves(world):
    rows, plan = answer(world, "distinct repliers to Ana (not counting herself)")
    assert rows == [{"count": 2}], plan.pipeline
    assert plan.not_understood == []


@pytest.mark.parametrize(
    "question",
    ["Ana's replies, not counting the ones in her own threads", "Ana's replies to threads that aren't her own"],
)
def test_replies_outside_ones_own_threads(world, question):
    rows, plan = answer(world, question)
    assert refs(rows) == ["a4"], plan.pipeline


@pytest.mark.parametrize(
    "question",
    [
        "How many threads did Ben take no part in (didn't start, didn't reply)?",
        "threads without Ben in them at all — count",
        "Ben 既没发起、也没回复过的帖子有多少",  # Chinese: neither started nor replied
        "Ben 从未参与过的讨论串有几个",
        "threads Ben stayed out of (didn't start, didn't reply): how many?",
        "how many threads went by without Ben - not started by him and no reply from him?",
    ],
)
def test_threads_someone_took_no_part_in(world, question):
    # the threads: a1 (Ana; Ben replied), a2 (Ana alone), b3 (Ben's), c3 (Cy's; Ben replied): only a2
    rows, plan = answer(world, question)
    assert rows == [{"count": 1}], plan.pipeline
    assert plan.not_understood == []


def test_the_total_replies_across_the_threads_someone_started(world):
    rows, plan = answer(world, "total replies across all the threads I started", asker="UA")
    assert rows == [{"total": 4}], plan.pipeline


def test_a_word_beginning_like_replies_is_a_topic():
    # "REPL" is a subject, not the verb "reply": it goes to full text
    from context_engine.query.planner.spans import IMPLIED

    assert IMPLIED.fullmatch("replies") and IMPLIED.fullmatch("replied") and not IMPLIED.fullmatch("repl")


def test_an_acronym_topic_is_searched(world):
    rows, plan = answer(world, "How many of Cy's messages talk about the REPL?")
    # a thing named: the word in either number, in the messages' text
    assert [(f.field, f.op, f.value) for f in plan.ir.filters if "words" in f.op] == [
        ("text", "exact_words", ["repl", "repls"])
    ]
    assert plan.not_understood == []
    assert rows == [{"count": 1}], plan.pipeline


@pytest.mark.parametrize(
    "question,expected",
    [
        # threads the starter never replied in: a1 (Ben and Cy replied); not a2, where Ana answered herself
        ("in how many of Ana's threads did she never write a reply herself?", 1),
        ("threads Ana started but didn't follow up in - count", 1),
        ("Ana 发起的讨论串里，她自己一次都没回复的有几个？", 1),
        ("Ana's threads where she hasn't posted a single answer: how many?", 1),
        ("how many of Ana's threads got answers only from other people, with her never chiming in?", 1),
        ("Ana's threads that got replies only from others - count", 1),
        ("count the threads Ana opened but never jumped in on", 1),
        # threads only their starter replied in: a2 (Ana answered herself); not a1, nor a message without replies
        ("of Ana's threads, how many drew no answers from anybody else?", 1),
        ("how many of Ana's threads are without any reply from somebody else?", 1),
        ("threads by Ana in which no one except Ana replied - count them", 1),
        ("Ana: how many threads with only her own replies", 1),
        ("how many of Ben's threads had nobody but Ben responded", 0),  # Ana and Cy answered b3
        # one person's replies in the threads another started: b1, b2
        ("how many replies has Ben written in threads Ana started?", 2),
        ("Ben answering Ana's threads - how often?", 2),
        ("Ben 在 Ana 发起的讨论串里回复过多少次？", 2),
    ],
)
def test_who_replied_in_whose_threads(world, question, expected):
    rows, plan = answer(world, question)
    assert rows == [{"count": expected}], plan.pipeline


def test_threads_with_replies_from_at_least_n_people_are_the_starters(world):
    rows, plan = answer(world, "Ana's threads that got replies from at least two different people")
    assert refs(rows) == ["a1"], plan.pipeline


@pytest.mark.parametrize(
    "question,expected",
    [
        # the bound after the number; "different" ends in "nt" but is no negation
        ("Ana's posts where 2+ different users replied", ["a1"]),
        ("threads that two or more distinct people replied in", ["a1", "b3"]),
        ("threads with 1 or fewer repliers", ["a2", "c3"]),
        ("Ana 的帖子里有两个或更多人回复的是哪些", ["a1"]),  # Chinese: the bound after the number
    ],
)
def test_a_bound_after_the_number_of_repliers(world, question, expected):
    rows, plan = answer(world, question)
    assert refs(rows) == expected, plan.pipeline
    assert not plan.not_understood, plan.not_understood


def test_replies_in_other_peoples_threads_not_started_by_someone(world):
    # Ben's replies: b1, b2 (Ana's thread); and in Cy's thread: b4. Not Ana's threads: b4 only
    rows, plan = answer(world, "How many replies did Ben write in other people's threads that weren't started by Ana?")
    assert rows == [{"count": 1}], plan.pipeline
    assert plan.not_understood == []


@pytest.mark.parametrize(
    "question",
    [
        "in how many other people's threads has Ana replied?",
        "number of threads started by somebody else that Ana jumped into",
        "Ana: count of distinct threads she answered in, not her own",
    ],
)
def test_threads_counted_by_someones_replies_in_them_are_each_counted_once(world, question):
    _, plan = answer(world, question)
    assert (plan.ir.shape.kind, plan.ir.shape.field) == ("distinct_count", "thread_ts"), plan.pipeline
    assert plan.not_understood == [], plan.not_understood


@pytest.mark.parametrize(
    "question,expected",
    [
        # a second person replying in the first one's threads: among the thread's repliers
        ("In how many threads opened by Ana did Cy answer?", 1),  # a1
        ("number of Ben's threads with a reply from Ana", 1),  # b3
        ("Ben 的讨论串里 Cy 回复过的有多少个？", 1),  # b3
        # ... and never among them: threads with replies, none of them that person's
        ("Ana's threads Ben never replied in, count", 1),  # a2 (a1 has Ben)
        ("Cy's threads that never heard from Ana: how many", 1),  # c3
        ("threads by Ana without any reply from Cy — count", 1),  # a2
        ("Ana 的讨论串里 Ben 一次都没回复过的有多少个？", 1),  # a2
        ("how many of Cy's threads has Ana not answered", 1),  # c3
        ("Ana's threads Cy didn't respond in: the number", 1),  # a2 (a contraction)
    ],
)
def test_threads_another_person_replied_in_or_not(world, question, expected):
    rows, plan = answer(world, question)
    assert rows == [{"count": expected}], plan.pipeline
    assert plan.not_understood == [], plan.not_understood


def test_inside_a_thread_is_no_topic(world):
    # "inside" says where the replies are, not what they are about: no full-text word
    rows, plan = answer(world, "count Ben's replies inside threads he didn't start")
    assert rows == [{"count": 3}], plan.pipeline  # b1, b2 (Ana's), b4 (Cy's)
    assert plan.ir.text == []


@pytest.mark.parametrize(
    "question", ["Ana's posts that were never in any thread", "messages by Ana never part of one thread"]
)
def test_never_in_a_thread_is_neither_a_start_nor_a_reply(world, question):
    rows, plan = answer(world, question)
    assert refs(rows) == ["a5"], plan.pipeline


@pytest.mark.parametrize(
    "question,expected",
    [
        ("至少有两个不同的人回复的讨论串", ["a1", "b3"]),  # Chinese: the bound before the number
        ("不到 2 位不同的人回复过的讨论串", ["a2", "c3"]),
    ],
)
def test_a_bound_before_the_number_of_repliers_in_chinese(world, question, expected):
    rows, plan = answer(world, question)
    assert refs(rows) == expected, plan.pipeline
    assert not plan.not_understood, plan.not_understood


@pytest.mark.parametrize(
    "question,expected",
    [
        ("what share of Ben's messages were thread replies?", {"share": 0.75}),  # b1, b2, b4 of b1..b4
        ("how many messages in March 2019 were replies inside threads", {"count": 7}),
    ],
)
def test_messages_said_to_be_replies_in_threads_are_the_replies(world, question, expected):
    rows, plan = answer(world, question)
    assert rows == [expected], plan.pipeline
    assert plan.not_understood == [], plan.not_understood


@pytest.mark.parametrize(
    "question",
    ["2019 年 3 月的消息里回复（thread 里的）占比是百分之多少？", "2019 年 3 月的消息里，thread 里的回复占百分之几？"],
)
def test_the_share_of_replies_in_chinese(world, question):
    """The replies (b1, c1, b2, a3, a4, c2, b4) among the 13 messages; not the thread starters that "thread" names."""
    rows, plan = answer(world, question)
    assert rows == [{"percent": pytest.approx(700 / 13)}], plan.pipeline
    assert plan.not_understood == [], plan.not_understood


def test_people_replying_in_my_threads_are_the_repliers_to_the_asker(world):
    """ "my threads" is the asker's, as "Ana's threads" is Ana's: the repliers are the others in them."""
    rows, plan = answer(world, "how many different people have replied in my threads?", asker="UA")
    assert rows == [{"count": 2}], plan.pipeline  # Ben and Cy; Ana's own replies do not count
    rows, plan = answer(world, "threads I started", asker="UA")
    assert refs(rows) == ["a1", "a2"], plan.pipeline


def test_a_named_day_is_a_date_not_someone_one_letter_away(world):
    _store, catalog = world
    ctx, failed = resolve("how many different people posted on Valentine's Day 2019?", NOW, catalog, None)
    assert failed is None and ctx.mentions == []
    plan = OfflinePlanner().plan(ctx)
    assert [(t.start, t.end) for t in plan.ir.times] == [(D(2019, 2, 14), D(2019, 2, 15))]
    assert plan.ir.shape.kind == "distinct_count" and plan.not_understood == []


@pytest.mark.parametrize(
    "question,expected", [("Ana 最后一次发消息是啥时候？给我看那条", ["a5"]), ("Cy 第一次发消息是什么时候", ["c1"])]
)
def test_the_last_time_someone_posted_said_in_chinese(world, question, expected):
    # 给我看: shown to the asker (no asker needed); 发消息: the posting verb on the noun; 啥时候: when
    rows, plan = answer(world, question)
    assert refs(rows) == expected, plan.pipeline
    assert plan.not_understood == []


@pytest.mark.parametrize("question", ["谁回 Ana 回得最多？", "谁回过 Ana 最多"])
def test_who_replied_to_someone_most_said_with_a_bare_hui(world, question):
    # 回 after 谁 is replying: the replies in Ana's threads by others, per author (Ben twice, Cy once)
    rows, plan = answer(world, question)
    assert rows[0] == {"_id": "UB", "count": 2}, plan.pipeline
    assert plan.not_understood == []


@pytest.mark.parametrize(
    "question,expected",
    [
        ("whose threads drew the most replies altogether?", {"_id": "UC", "sum_reply_count": 5}),  # Cy 5, Ana 3+1
        (
            "which thread starter collected the fewest replies in total across their threads?",
            {"_id": "UB", "sum_reply_count": 2},
        ),
    ],
)
def test_the_person_whose_threads_drew_the_most_replies_in_total(world, question, expected):
    # the replies summed per starter, not the one thread with the most (Cy's c3 alone would say Cy too: Ben tells)
    rows, plan = answer(world, question)
    assert rows == [expected], plan.pipeline
    assert plan.ir.shape.kind == "measures" and plan.not_understood == []


@pytest.mark.parametrize("question", ["total replies Ana's threads got", "total thread replies ana's threads received"])
def test_the_replies_someones_threads_got_are_summed(world, question):
    rows, plan = answer(world, question)
    assert rows == [{"total": 4}], plan.pipeline  # a1's 3 and a2's 1, not the 2 threads


@pytest.mark.parametrize(
    "question",
    ["who wrote the most replies?", "who replied to others the most?", "谁回复别人最多？", "谁回复最多？"],
)
def test_people_ranked_by_the_replies_they_wrote(world, question):
    # replies: Ben 3 (b1, b2, b4), Ana 2, Cy 2; every message: Ana 5, so not a ranking of all messages
    rows, plan = answer(world, question)
    assert rows[0] == {"_id": "UB", "count": 3}, plan.pipeline
    assert plan.not_understood == []

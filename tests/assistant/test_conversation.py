"""A scripted conversation on one thread (a checkpointer): each follow-up is resolved against the
turns before it, and each turn's records are exactly those of a hand-written gold query."""

import uuid
from datetime import datetime

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from context_engine import build_graph
from context_engine.config import Settings
from context_engine.query.engine import principals_of
from context_engine.query.execute import run_pipeline
from context_engine.resources import catalog_for, store_for

NOW = "2026-11-30T12:00:00Z"
LAST_WEEK = {"$gte": datetime(2026, 11, 23), "$lt": datetime(2026, 11, 30)}
OCTOBER = {"$gte": datetime(2026, 10, 1), "$lt": datetime(2026, 11, 1)}


def _merged(login, when):
    return ("pull_requests", [{"$match": {"merged": True, "user.login": login, "merged_at": when}}])


# (what the user types, the standalone question it must become, the gold query of its records)
ENGLISH = [
    ("PRs Rashid merged last week", "PRs Rashid merged last week", _merged("rsh-dev", LAST_WEEK)),
    ("and in October?", "PRs Rashid merged in October 2026", _merged("rsh-dev", OCTOBER)),  # the window's year
    ("what about Priya?", "PRs Priya merged in October 2026", _merged("priyar", OCTOBER)),
    ("他呢？", "PRs Rashid Khan merged in October 2026", _merged("rsh-dev", OCTOBER)),
    (
        "PRs Priya opened in October",
        "PRs Priya opened in October",
        ("pull_requests", [{"$match": {"user.login": "priyar", "created_at": OCTOBER}}]),
    ),
    (
        "which of those are still open?",
        "PRs Priya opened in October open",
        ("pull_requests", [{"$match": {"user.login": "priyar", "created_at": OCTOBER, "state": "open"}}]),
    ),
    ("open PRs", "open PRs", ("pull_requests", [{"$match": {"state": "open"}}])),
    (
        "only the ones in payments",
        "open PRs in payments",
        ("pull_requests", [{"$match": {"state": "open", "repo": "acme/payments"}}]),
    ),
    (
        "open issues assigned to me",
        "open issues assigned to me",
        (
            "issues",
            [{"$match": {"fields.assignee.name": "rkhan", "fields.status.name": {"$nin": ["Done", "Won't Do"]}}}],
        ),
    ),
    (
        "李娜呢？",
        "open issues assigned to 李娜",
        ("issues", [{"$match": {"fields.assignee.name": "nli", "fields.status.name": {"$nin": ["Done", "Won't Do"]}}}]),
    ),
]

CHINESE = [
    ("上周张伟合并了哪些PR？", "上周张伟合并了哪些PR？", _merged("zwei-dev", LAST_WEEK)),
    ("十月呢？", "2026 年 十月张伟合并了哪些PR？", _merged("zwei-dev", OCTOBER)),
    ("Priya呢？", "2026 年 十月Priya合并了哪些PR？", _merged("priyar", OCTOBER)),
]


@pytest.fixture(scope="module")
def thread_graph():
    return build_graph(checkpointer=InMemorySaver())


def _gold(sample_dir, collection, pipeline):
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)
    rows = run_pipeline(
        store_for(settings),
        collection,
        pipeline,
        tenant="acme",
        principals=principals_of(catalog.directory.asker("rsh-dev")),
        schema=catalog.schemas.get(collection),
    )
    return {r["ref"] for r in rows}


@pytest.mark.parametrize("script", [ENGLISH, CHINESE], ids=["english", "chinese"])
def test_follow_ups_resolve_against_earlier_turns(sample_dir, thread_graph, script):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    for asked, standalone, (collection, gold) in script:
        out = thread_graph.invoke(
            {"messages": [{"role": "user", "content": asked}], "now": NOW}, config, context=context
        )
        assert out["question"] == standalone, asked
        want = _gold(sample_dir, collection, gold)
        assert want, f"the gold query of {asked!r} finds nothing: a useless check"
        assert {r["ref"] for r in out["records"]} == want, asked
    state = thread_graph.get_state(config).values
    assert len(state["messages"]) == 2 * len(script)  # question, answer, question, answer ...
    assert len(state["attempts"]) == 1  # this turn's attempts only: nothing piles up across turns


def test_who_reviewed_it_names_the_reviewers_of_the_last_answer_s_first_record(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    first = thread_graph.invoke({"question": "PRs Rashid merged last week", "now": NOW}, config, context=context)
    ref = first["records"][0]["ref"]
    out = thread_graph.invoke({"question": "who reviewed it?", "now": NOW}, config, context=context)
    assert out["question"] == f"who reviewed PR {ref}?"  # the record, with its kind
    pr = _rows(sample_dir, ref)
    assert {r["_id"] for r in out["records"]} == {rv["user"]["login"] for rv in pr["reviews"]}


def _rows(sample_dir, ref):
    settings = Settings(data_dir=sample_dir, tenant="acme", use_llm=False)
    (pr,) = run_pipeline(
        store_for(settings), "pull_requests", [{"$match": {"ref": ref}}], tenant="acme", principals=["*"], schema=None
    )
    return pr


def test_a_new_thread_does_not_see_another_thread_s_turns(sample_dir, thread_graph):
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    thread_graph.invoke(
        {"question": "PRs Rashid merged last week", "now": NOW}, {"configurable": {"thread_id": "a"}}, context=context
    )
    out = thread_graph.invoke(
        {"question": "and in October?", "now": NOW}, {"configurable": {"thread_id": "b"}}, context=context
    )
    assert out["question"] == "and in October?" and not out["followup"]


@pytest.mark.llm
@pytest.mark.skipif(not __import__("os").environ.get("OPENAI_BASE_URL"), reason="needs a chat model endpoint")
def test_follow_ups_with_a_real_chat_model(sample_dir):
    """With a model, the follow-up is rewritten from the conversation (the rule-based rewrite as a
    hint); whatever the model writes, the turn names the person and time the thread is about."""
    graph = build_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev"}
    graph.invoke({"question": "PRs Rashid merged last week", "now": NOW}, config, context=context)
    out = graph.invoke({"question": "and in October?", "now": NOW}, config, context=context)
    assert "october" in out["question"].lower() and "rashid" in out["question"].lower()
    assert out["followup"]


def test_a_thread_reused_by_another_tenant_or_person_resolves_nothing_against_their_turns(sample_dir, thread_graph):
    """A thread id is not an access list: turns of one asker never become another's follow-up context."""
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    acme = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    thread_graph.invoke({"question": "PRs Rashid merged last week", "now": NOW}, config, context=acme)
    for other in ({**acme, "tenant": "globex", "user": ""}, {**acme, "user": "priyar"}):
        out = thread_graph.invoke({"question": "who reviewed it?", "now": NOW}, config, context=other)
        assert out["question"] == "who reviewed it?" and not out["followup"]
        assert "acme/" not in out["answer"] or other["tenant"] == "acme"
    same = thread_graph.invoke({"question": "and in October?", "now": NOW}, config, context=acme)
    assert same["question"] == "PRs Rashid merged in October 2026"


SEPTEMBER = {"$gte": datetime(2026, 9, 1), "$lt": datetime(2026, 10, 1)}


def _say(thread_graph, config, asked, user="rsh-dev", sample_dir=None):
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": user, "use_llm": False}
    return thread_graph.invoke({"messages": [{"role": "user", "content": asked}], "now": NOW}, config, context=context)


def test_a_declined_name_is_picked_from_its_candidates_and_the_window_shifted_in_other_words(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = _say(thread_graph, config, "PRs Alex merged in October", sample_dir=sample_dir)
    assert first["outcome"] == "resolution_failed" and first["records"] == []
    assert "Alex Chen (achen42)" in first["answer"] and "Alex Morgan (amorgan-dev)" in first["answer"]
    script = [
        ("I meant achen42", "PRs Alex Chen merged in October", _merged("achen42", OCTOBER)),
        ("the month before", "PRs Alex Chen merged in September 2026", _merged("achen42", SEPTEMBER)),
        (
            "what about earlier?",
            "PRs Alex Chen merged before 2026-09-01",
            _merged("achen42", {"$lt": datetime(2026, 9, 1)}),
        ),
        ("same for Priya", "PRs Priya merged before 2026-09-01", _merged("priyar", {"$lt": datetime(2026, 9, 1)})),
    ]
    for asked, standalone, (collection, gold) in script:
        out = _say(thread_graph, config, asked, sample_dir=sample_dir)
        assert out["question"] == standalone, asked
        want = _gold(sample_dir, collection, gold)
        assert want and {r["ref"] for r in out["records"]} == want, asked


def test_the_second_one_in_chinese_picks_the_second_candidate(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    _say(thread_graph, config, "Alex十月合并了哪些PR？", sample_dir=sample_dir)
    out = _say(thread_graph, config, "第一个", sample_dir=sample_dir)
    assert out["question"] == "Alex Chen十月合并了哪些PR？"
    assert {r["ref"] for r in out["records"]} == _gold(sample_dir, *_merged("achen42", OCTOBER))
    out = _say(thread_graph, config, "再往前一个月", sample_dir=sample_dir)
    assert {r["ref"] for r in out["records"]} == _gold(sample_dir, *_merged("achen42", SEPTEMBER))


def test_follow_ups_after_semantic_and_hybrid_answers_keep_the_topic_and_the_records(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    out = _say(thread_graph, config, "why did we switch the session cache to Redis?", sample_dir=sample_dir)
    assert out["route"] == "semantic"
    out = _say(thread_graph, config, "who reviewed it?", sample_dir=sample_dir)
    assert out["question"] == "who reviewed acme/infra#812?"
    pr = _rows(sample_dir, "acme/infra#812")
    assert {r["_id"] for r in out["records"]} == {rv["user"]["login"] for rv in pr["reviews"]}
    out = _say(
        thread_graph,
        config,
        "what happened with the duplicate charges in payments in September?",
        sample_dir=sample_dir,
    )
    assert out["route"] == "hybrid" and [r["ref"] for r in out["records"]] == ["acme/payments#1377"]
    out = _say(thread_graph, config, "and the month after?", sample_dir=sample_dir)
    assert out["question"] == "what happened with the duplicate charges in payments in October 2026?"
    assert out["route"] == "hybrid" and "duplicate charges" in out["answer"]  # the topic stayed with the thread


def test_that_month_after_the_busiest_month_is_the_month_the_answer_named(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    first = thread_graph.invoke(
        {"question": "which month of 2026 had the most PRs merged", "now": NOW}, config, context=context
    )
    month = first["records"][0]["_id"]  # "2026-MM"
    start = datetime(int(month[:4]), int(month[5:]), 1)
    end = datetime(start.year + start.month // 12, start.month % 12 + 1, 1)
    out = thread_graph.invoke({"question": "who merged the most that month?", "now": NOW}, config, context=context)
    assert f"{start:%B %Y}" in out["question"]
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)
    rows = run_pipeline(
        store_for(settings),
        "pull_requests",
        [
            {"$match": {"merged": True, "merged_at": {"$gte": start, "$lt": end}}},
            {"$group": {"_id": "$merged_by.login", "count": {"$sum": 1}}},
            {"$sort": {"count": -1}},
        ],
        tenant="acme",
        principals=principals_of(catalog.directory.asker("rsh-dev")),
        schema=catalog.schemas["pull_requests"],
    )
    assert rows and out["records"][0]["count"] == rows[0]["count"]


def test_a_name_declined_without_candidates_is_named_again_in_the_next_turn(sample_dir, thread_graph):
    # nobody is close enough to "Zbigniew Quackenbush" to be offered: the thread still keeps the
    # declined words, so the next turn naming someone asks the declined question about them
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = _say(thread_graph, config, "PRs Zbigniew Quackenbush merged in October", sample_dir=sample_dir)
    assert first["outcome"] == "resolution_failed" and first["records"] == []
    out = _say(thread_graph, config, "sorry, I meant priyar", sample_dir=sample_dir)
    assert out["question"] == "PRs priyar merged in October"
    assert {r["ref"] for r in out["records"]} == _gold(sample_dir, *_merged("priyar", OCTOBER))


def test_nobody_claimed_narrows_the_last_answer_to_unassigned_issues(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    _say(thread_graph, config, "open issues", sample_dir=sample_dir)
    out = _say(thread_graph, config, "其中没人认领的呢", sample_dir=sample_dir)
    gold = [{"$match": {"fields.status.name": {"$nin": ["Done", "Won't Do"]}, "fields.assignee": None}}]
    want = _gold(sample_dir, "issues", gold)
    assert want and {r["ref"] for r in out["records"]} == want
    assert want < _gold(sample_dir, "issues", [{"$match": {"fields.status.name": {"$nin": ["Done", "Won't Do"]}}}])


def test_those_after_the_one_group_an_answer_named_are_that_groups_records(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = {"data_dir": str(sample_dir), "tenant": "acme", "user": "rsh-dev", "use_llm": False}
    first = thread_graph.invoke(
        {"question": "which repository had the most pull requests opened in 2026", "now": NOW}, config, context=context
    )
    repo = first["records"][0]["_id"]
    turn = thread_graph.get_state(config).values["turns"][-1]
    assert turn["answer_groups"] == {"field": "repo", "keys": [repo]}
    out = thread_graph.invoke({"question": "and how many of those are open?", "now": NOW}, config, context=context)
    assert f"in {repo}" in out["question"]
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)
    opened = {"$gte": datetime(2026, 1, 1), "$lt": datetime(2027, 1, 1)}
    rows = run_pipeline(
        store_for(settings),
        "pull_requests",
        [{"$match": {"repo": repo, "state": "open", "created_at": opened}}, {"$count": "count"}],
        tenant="acme",
        principals=principals_of(catalog.directory.asker("rsh-dev")),
        schema=catalog.schemas["pull_requests"],
    )
    assert out["records"][0]["count"] == (rows[0]["count"] if rows else 0)


def test_follow_ups_change_the_last_plan_and_a_picked_record_does_not_become_the_base(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    opened = {"$gte": datetime(2026, 1, 1), "$lt": datetime(2026, 11, 30, 12)}
    _say(thread_graph, config, "pull requests opened this year", sample_dir=sample_dir)
    # the person of one record of the last answer: its author, not the record
    out = _say(thread_graph, config, "who authored the oldest of them?", sample_dir=sample_dir)
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    catalog = catalog_for(settings)

    def rows(collection, pipeline):
        return run_pipeline(
            store_for(settings),
            collection,
            pipeline,
            tenant="acme",
            principals=principals_of(catalog.directory.asker("rsh-dev")),
            schema=catalog.schemas[collection],
            max_rows=10_000,
        )

    (oldest,) = rows("pull_requests", [{"$match": {"created_at": opened}}, {"$sort": {"created_at": 1}}, {"$limit": 1}])
    assert [r["_id"] for r in out["records"]] == [oldest["user"]["login"]]
    # the next change applies to the records that one was picked from, not to the pick
    out = _say(thread_graph, config, "and the year before, how many?", sample_dir=sample_dir)
    last_year = {"$gte": datetime(2025, 1, 1), "$lt": datetime(2026, 1, 1)}
    (counted,) = rows("pull_requests", [{"$match": {"created_at": last_year}}, {"$count": "count"}])
    assert out["records"] == [{"count": counted["count"]}]
    # narrowed, and counted still
    out = _say(thread_graph, config, "only counting the merged ones", sample_dir=sample_dir)
    (merged,) = rows("pull_requests", [{"$match": {"created_at": last_year, "merged": True}}, {"$count": "count"}])
    assert 0 < merged["count"] < counted["count"]
    assert out["records"] == [{"count": merged["count"]}]


def test_a_pointing_word_no_rule_resolved_is_said_not_understood(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    _say(thread_graph, config, "how many PRs were merged last week", sample_dir=sample_dir)
    out = _say(
        thread_graph, config, "was it reviewed by anyone from payments before the freeze?", sample_dir=sample_dir
    )
    assert "it" in [s["text"] for s in out["not_understood"]]


def test_back_to_an_earlier_person_narrows_that_turn_s_records_not_the_last(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    _say(thread_graph, config, "pull requests Priya opened this year", sample_dir=sample_dir)
    _say(thread_graph, config, "separate question: how many PRs are still open?", sample_dir=sample_dir)
    out = _say(thread_graph, config, "going back to Priya: which of hers got merged?", sample_dir=sample_dir)
    this_year = {"$gte": datetime(2026, 1, 1), "$lt": datetime(2026, 11, 30, 12)}
    want = _gold(
        sample_dir,
        "pull_requests",
        [{"$match": {"user.login": "priyar", "created_at": this_year, "merged": True}}],
    )
    assert want  # a gold that finds nothing would check nothing
    assert {r["ref"] for r in out["records"]} == want, (out["question"], out.get("followup"))


def test_a_field_of_the_record_just_answered_and_one_its_records_lack(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = _say(thread_graph, config, "which PR opened in 2026 has the most comments", sample_dir=sample_dir)
    (one,) = first["records"]
    # a field the records do not have is declined, naming it, not answered with the whole record
    out = _say(thread_graph, config, "so what urgency was it given?", sample_dir=sample_dir)
    assert out["outcome"] == "resolution_failed" and out["records"] == [] and "urgency" in out["answer"]
    # the thread's plan stands after the decline: the next field is of the same record
    out = _say(thread_graph, config, "那它有多少评论？", sample_dir=sample_dir)
    assert [(r["ref"], r["comments"]) for r in out["records"]] == [(one["ref"], one["comments"])]
    assert f"comments: {one['comments']}" in out["answer"]


def test_another_person_is_the_same_plan_and_a_name_nobody_has_is_declined(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    _say(thread_graph, config, "PRs Priya merged in October", sample_dir=sample_dir)
    out = _say(thread_graph, config, "and for Ottoline?", sample_dir=sample_dir)
    assert out["outcome"] == "resolution_failed" and out["records"] == [] and "Ottoline" in out["answer"]
    out = _say(thread_graph, config, "what about Lars?", sample_dir=sample_dir)
    assert {r["ref"] for r in out["records"]} == _gold(sample_dir, *_merged("larsn", OCTOBER))


def test_a_follow_up_on_a_plan_that_left_words_unread_says_so_too(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = _say(thread_graph, config, "open PRs Lars opened in 2026, preferably quickly", sample_dir=sample_dir)
    unread = [s["text"] for s in first["not_understood"]]
    assert unread
    for asked in ("count them", "那 2025 年呢"):
        out = _say(thread_graph, config, asked, sample_dir=sample_dir)
        assert [s["text"] for s in out["not_understood"]] == unread, asked


def test_the_rest_after_a_narrowing_is_the_complement_on_the_same_records(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}

    def count(asked):
        (row,) = _say(thread_graph, config, asked, sample_dir=sample_dir)["records"]
        return row["count"]

    counted, merged = count("how many PRs were opened in 2026?"), count("how many of those got merged?")
    assert 0 < merged < counted
    assert count("and the remaining ones?") == counted - merged


def test_a_listed_record_named_by_a_word_of_its_title_its_number_and_the_list_after_it(sample_dir, thread_graph):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    listed = _say(thread_graph, config, "PRs opened in 2026", sample_dir=sample_dir)["records"][:20]
    words = [{w.strip(".,:;()[]`'\"").lower() for w in r["title"].split()} for r in listed]
    # a word of one listed title only, long enough to be a subject
    one, word = next(
        (r, w)
        for r, ws in zip(listed, words, strict=True)
        for w in sorted(ws)
        if len(w) > 6 and w.isalpha() and sum(w in other for other in words) == 1
    )
    out = _say(thread_graph, config, f"the {word} one — how many comments has it got?", sample_dir=sample_dir)
    assert [(r["ref"], r["comments"]) for r in out["records"]] == [(one["ref"], one["comments"])], out["followup"]
    # "it" is still that record; its number names it too
    out = _say(thread_graph, config, "who opened it?", sample_dir=sample_dir)
    assert [r["_id"] for r in out["records"]] == [one["user"]["login"]]
    number = one["ref"].rsplit("#", 1)[1]
    out = _say(thread_graph, config, f"#{number} 有几条评论？", sample_dir=sample_dir)
    assert [(r["ref"], r["comments"]) for r in out["records"]] == [(one["ref"], one["comments"])]
    # words naming several listed records are declined, and what comes next is said of the list again
    shared = next(
        w
        for ws in words
        for w in sorted(ws)
        if len(w) > 4 and w.isalpha() and w not in ("first", "other", "which") and sum(w in o for o in words) > 1
    )
    out = _say(thread_graph, config, f"the {shared} one — how many comments?", sample_dir=sample_dir)
    assert out["outcome"] == "resolution_failed" and shared in out["answer"] and "which one" in out["answer"]
    out = _say(thread_graph, config, "how many is that?", sample_dir=sample_dir)
    settings = Settings(data_dir=sample_dir, tenant="acme", asker="rsh-dev", use_llm=False)
    year = {"$gte": datetime(2026, 1, 1), "$lt": datetime(2027, 1, 1)}
    counted = run_pipeline(
        store_for(settings),
        "pull_requests",
        [{"$match": {"created_at": year}}, {"$count": "count"}],
        tenant="acme",
        principals=principals_of(catalog_for(settings).directory.asker("rsh-dev")),
        schema=catalog_for(settings).schemas["pull_requests"],
    )
    assert out["records"] == counted

"""Never drop a name (issue 27 item 2, the person half): a name in a person's place that names no one
is declined with what could not be resolved and the closest people the asker may see, through
`engine.resolve`, the structured subgraph, the graph and the CLI; a name that fits several people is
declined with them; dates, stored values, topics and plain English are never taken for people."""

from __future__ import annotations

import json

import pytest

from context_engine import graph
from context_engine.access import PUBLIC
from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.query import engine
from context_engine.query.engine import ResolutionFailed
from context_engine.resources import asker_for, catalog_for, forget, value_index_for
from context_engine.text import parse_now
from tests.conftest import run_cli

NOW = "2026-11-30T12:00:00Z"


def _resolve(settings: Settings, question: str, *, values: bool = True):
    catalog = catalog_for(settings)
    return engine.resolve(
        question,
        parse_now(NOW),
        catalog,
        asker_for(settings, catalog),
        values=value_index_for(settings) if values else None,
    )


@pytest.mark.parametrize(
    "question, unresolved",
    [
        ("open PRs by Nobody Atall", "Nobody Atall"),
        ("what did Zed merge", "Zed"),
        ("what did zed merge last week", "zed"),
        ("Quentin's PRs", "Quentin"),
        ("issues assigned to Bob", "Bob"),
        ("张三的PR", "张三"),
        ("上周张三合并了哪些PR？", "张三"),
        ("慕容子轩今年合并了几个 PR？", "慕容子轩"),  # when, between the name and the verb
        ("帮我查一下司马静怡最近说了什么", "司马静怡"),  # what a person says
        ("分配给李四的任务", "李四"),
        ("what did Karl von Strauss merge", "Karl von Strauss"),  # a family name's particle is part of it
        ("issues Karl von Strauss filed", "Karl von Strauss"),
        ("how many tickets is Bob assigned to?", "Bob"),
        ("Zed 上周合并了哪些 PR？", "Zed"),  # a Latin name before Chinese
        ("Nobody Atall 发了多少条消息？", "Nobody Atall"),
        ("Quentin 在 2021 年合并了哪些 PR？", "Quentin"),
        ("Nobody Atall 的 PR", "Nobody Atall"),
        ("list everything Nobody Atall-Smith has opened", "Nobody Atall-Smith"),  # before "has <done>"
        ("What has Nobody Atall been posting lately?", "Nobody Atall"),
    ],
)
def test_a_name_that_names_no_one_is_declined_never_dropped(settings, question, unresolved):
    ctx, failed = _resolve(settings, question)
    assert ctx is None and failed.unresolved == unresolved
    assert repr(unresolved) in failed.message and "no one by that name" in failed.message
    assert failed.candidates == []


def test_the_closest_people_are_offered_as_name_and_key(settings):
    _, failed = _resolve(settings, "PRs by Tomas Beckett")
    assert failed.unresolved == "Tomas Beckett" and [p.key for p in failed.candidates] == ["tbecker"]
    assert "'Tomas Beckett'" in failed.message and "Tom Becker (tbecker)" in failed.message
    _, failed = _resolve(settings, "what did Priyanka merge")
    assert [p.key for p in failed.candidates] == ["priyar"] and "Priya Raman (priyar)" in failed.message
    # Without a value index the directory's names still decline it (never a query without the name).
    _, failed = _resolve(settings, "PRs by Tomas Beckett", values=False)
    assert failed.unresolved == "Tomas Beckett" and "tbecker" in [p.key for p in failed.candidates]


def test_a_name_that_only_begins_a_login_is_declined_with_it(settings):
    # "Amor" is the start of the login amorgan-dev, which the data never links to that name.
    ctx, failed = _resolve(settings, "Amor's open PRs")
    assert ctx is None and failed.unresolved == "Amor" and "amorgan-dev" in [p.key for p in failed.candidates]


def test_a_full_name_read_only_in_part_through_a_typo_is_declined(settings):
    # "Beckr" is near Tom Becker, "Carlos" is no one: the name is not guessed from its half.
    ctx, failed = _resolve(settings, "what did Carlos Beckr merge")
    assert ctx is None and failed.unresolved == "Carlos Beckr" and failed.candidates[0].key == "tbecker"
    ctx, failed = _resolve(settings, "what did Tom Beckr merge")  # the whole name, one typo: read
    assert failed is None and [m.person.key for m in ctx.mentions] == ["tbecker"]


def test_a_name_that_fits_several_people_is_declined_with_them(settings):
    ctx, failed = _resolve(settings, "open PRs by Alex")
    assert ctx is None and failed.unresolved == "Alex"
    assert {p.key for p in failed.candidates} == {"achen42", "amorgan-dev"}
    assert "Alex Chen (achen42)" in failed.message and "Alex Morgan (amorgan-dev)" in failed.message


@pytest.mark.parametrize(
    "question",
    [
        "Which PRs did Rashid merge last week?",
        "上周张伟合并了哪些PR？",
        "张伟上周一共合并了多少个 PR？",
        "本周合并了哪些PR",
        "how many open PRs are labelled security?",
        "open prs in the payments repo",
        "PRs grouped by repo",
        "sorted by Date",
        "PRs by label",
        "why did we switch the session cache to Redis?",
        "PRs by Redis",
        "what does the ADR say about caching",
        "What's In Review in the OPS project?",
        "messages in #payments",
        "What did the team merge in April",
        "Show Monday's messages",
        "Today's PRs",
        "PRs labelled ui by anyone",
        "what did we ship",
        "did anyone merge anything",
        "Has Grace Park got anything open right now?",
        "who reviews payments changes the most",
        "PRs by nobody",
        "messages from Kubernetes folks",
        "issues from OPS in Sprint 48",
        "threads in #incidents since March",
        "what did Lars merge",
        "Rashid 上周合并了哪些 PR？",
        "本周被标记为 In Review 的工单有哪些？",
        "what did Rashid Khan merge",
        "Docker 的 issue 有哪些",
        "Kubernetes 相关的 PR",  # a single word before 的 is a topic as often as a name
        "how many PRs were opened by first-time contributors?",  # plain words joined by a hyphen
        "issues filed by non-maintainers this year",  # a plain noun negated
        "提到 Service Mesh 的 PR",  # a name after a topic cue is the subject
        "没有被分配给任何人的 open issue 有多少",  # 任何人: anyone
        "List the PRs merged last week. Include their titles.",  # an English word begins a later sentence
        "Which issues are still open? Ensure the oldest comes first.",
    ],
)
def test_dates_values_topics_and_plain_english_are_not_unknown_people(settings, question):
    _, failed = _resolve(settings, question)
    assert failed is None or "anyone named" not in failed.message, failed and failed.message


@pytest.mark.parametrize(
    "question, unresolved",
    [
        ("Thanks. Zed opened which PRs last week?", "Zed"),
        ("Quick one. Ottoline Fairweather's open PRs?", "Ottoline Fairweather"),
        ("List open PRs. Include Zed's.", "Zed"),  # the sentence's English first word is not part of the name
    ],
)
def test_a_name_beginning_a_later_sentence_is_still_a_name(settings, question, unresolved):
    result = run_structured(question, settings, now=NOW)
    assert isinstance(result, ResolutionFailed) and result.unresolved == unresolved, getattr(result, "message", "")


@pytest.mark.parametrize(
    "question,declined",
    [
        ("merged PRs from zoltan", True),
        ("merged PRs by tomasz last week", True),
        ("merged PRs from contributors", False),
        ("merged PRs by engineers last week", False),  # English, plural too
    ],
)
def test_one_lower_case_word_after_by_or_from_is_a_name_unless_it_is_english(settings, question, declined):
    result = run_structured(question, settings, now=NOW)
    assert isinstance(result, ResolutionFailed) is declined, getattr(result, "message", "")


@pytest.mark.parametrize(
    "question,unresolved",
    [
        ("which of ottoline's pull requests never got merged", "ottoline"),  # a possessive, nothing else asked
        ("tickets zebulon reported that nobody labelled", "zebulon"),  # the records, then who filed them
        ("show me bartholomew’s open prs", "bartholomew"),  # a typographic apostrophe
    ],
)
def test_a_lower_case_first_name_in_a_persons_place_is_declined(settings, question, unresolved):
    result = run_structured(question, settings, now=NOW)
    assert isinstance(result, ResolutionFailed) and result.unresolved == unresolved, getattr(result, "message", "")
    assert not result.rows


@pytest.mark.parametrize(
    "question",
    [
        "what's today's newest issue",
        "everyone's open PRs",
        "issues people filed last week",
        "PRs the team merged in April",
        "priyar's open pull requests",  # a login in lower case is someone
    ],
)
def test_lower_case_english_or_a_login_in_a_persons_place_is_no_unknown_person(settings, question):
    _, failed = _resolve(settings, question)
    assert failed is None, failed.message


def test_declined_through_the_structured_subgraph_with_candidates(settings):
    result = run_structured("PRs by Tomas Beckett", settings, now=NOW)
    assert isinstance(result, ResolutionFailed) and result.rows == [] and result.attempts == []
    assert result.unresolved == "Tomas Beckett" and [p.key for p in result.candidates] == ["tbecker"]


def test_declined_through_the_graph(sample_dir):
    out = graph.invoke(
        {"question": "what did Zed merge last week", "now": NOW},
        context={"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False},
    )
    assert "'Zed'" in out["answer"] and "no one by that name" in out["answer"]
    assert out["records"] == [] and out["queries"] == []


@pytest.mark.parametrize("question, name", [("歐陽靜怡開過哪些 PR", "歐陽靜怡"), ("司马若兰开过哪些 PR", "司马若兰")])
def test_a_chinese_name_searched_as_words_is_declined_as_the_asker_wrote_it(settings, question, name):
    """Traditional characters are read as simplified; the decline quotes the characters typed."""
    result = run_structured(question, settings, now=NOW)
    assert isinstance(result, ResolutionFailed) and result.unresolved == name and repr(name) in result.message


def test_a_traditional_chinese_decline_through_the_graph_quotes_the_asker(sample_dir):
    from langgraph.checkpoint.memory import InMemorySaver

    from context_engine.assistant.graph import build_graph

    threaded, config = build_graph(checkpointer=InMemorySaver()), {"configurable": {"thread_id": "t"}}
    out = threaded.invoke(
        {"question": "上週歐陽靜怡合併了哪些 PR？", "now": NOW},
        config,
        context={"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False},
    )
    assert "'歐陽靜怡'" in out["answer"] and out["records"] == []
    turn = threaded.get_state(config).values["turns"][-1]
    assert turn["unresolved"] == "歐陽靜怡" and turn["question"] == "上週歐陽靜怡合併了哪些 PR？"


def test_declined_through_the_cli(sample_dir):
    out = run_cli("ask", "open PRs by Nobody Atall", "--json", "--now", NOW, "--data-dir", str(sample_dir))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert "'Nobody Atall'" in data["answer"] and "Found" not in data["answer"]
    assert data["records"] == [] and data["queries"] == []
    out = run_cli("ask", "PRs by Tomas Beckett", "--now", NOW, "--data-dir", str(sample_dir))
    assert "Tom Becker (tbecker)" in out.stdout and "Traceback" not in out.stderr


def test_only_people_the_asker_may_see_are_offered(tmp_path):
    """Mallory acts only in a record Sam may read: an outsider asking for a near miss of her name is
    told there is no one by that name, never offered her."""
    settings = Settings(data_dir=tmp_path, mongodb_uri=None, tenant="t3", use_llm=False)
    people = [
        {"login": "sam", "name": "Sam Reader", "source": "sample"},
        {"login": "mallory", "name": "Mallory Hidden", "source": "sample"},
    ]
    prs = [
        {
            "number": n,
            "repo": "acme/vault",
            "title": "x",
            "state": "open",
            "user": {"login": who},
            "html_url": f"https://github.com/acme/vault/pull/{n}",
            "acl": acl,
        }
        for n, who, acl in ((1, "sam", [PUBLIC]), (2, "mallory", ["github:sam"]))
    ]
    ingest(settings, {"t3": {"pull_requests": prs, "people": people}}, index=False)
    forget(settings)
    _, failed = _resolve(settings.with_overrides(asker="sam"), "PRs by Mallo Hid")
    assert failed.unresolved == "Mallo Hid" and [p.key for p in failed.candidates] == ["mallory"]
    _, failed = _resolve(settings, "PRs by Mallo Hid")
    assert failed.unresolved == "Mallo Hid" and failed.candidates == [] and "mallory" not in failed.message.lower()


@pytest.mark.parametrize("question", ["messages mentioning rashed", "讨论 rashed 的消息", "PRs about rashed"])
def test_a_lower_case_word_after_a_topic_cue_is_no_typo_for_a_name(settings, question):
    # "rashed" is one edit from Rashid: after "mentioning"/"about"/讨论 it is the subject, never Rashid guessed
    ctx, failed = _resolve(settings, question)
    assert failed is None and ctx.mentions == [], [m.text for m in ctx.mentions]


@pytest.mark.parametrize("question", ["messages mentioning Rashed", "PRs by rashed"])
def test_a_typo_for_a_name_is_still_read_where_a_person_is_named(settings, question):
    ctx, failed = _resolve(settings, question)
    assert failed is None and [m.person.name for m in ctx.mentions] == ["Rashid Khan"]

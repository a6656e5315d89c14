"""Topic inside structure: a hybrid question's structured rows are narrowed to those about its topic
(answering/topic.py), on the sample corpus through the graph and as a unit."""

import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from context_engine import build_graph
from context_engine.answering.topic import filter_words, match_topic
from context_engine.sources.sample import STORIES

NOW = "2026-11-30T12:00:00Z"
DOUBLE_CHARGE_PR = STORIES["payments_double_charge"]["pr"]  # written in Chinese: no English topic word in it
_graph = build_graph(checkpointer=InMemorySaver())


def _ask(sample_dir, question, user="priyar"):
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    out = _graph.invoke(
        {"question": question, "now": NOW},
        config,
        context={"data_dir": str(sample_dir), "tenant": "acme", "use_llm": False, "user": user},
    )
    return {**_graph.get_state(config).values, **out}


@pytest.mark.parametrize(
    "question",
    [
        "what happened with the duplicate charges in payments in September?",  # make demo's question
        "why were customers charged twice in payments in September?",
        "what went wrong with duplicate charges in the payments repo last September?",
        "9月支付仓库里关于重复扣款的PR",
    ],
)
def test_hybrid_answer_leads_with_the_record_about_the_topic(sample_dir, question):
    out = _ask(sample_dir, question)
    assert out["route"] == "hybrid"
    assert [r["ref"] for r in out["records"]] == [DOUBLE_CHARGE_PR]
    assert out["citations"][0]["id"] == DOUBLE_CHARGE_PR
    first_line = out["answer"].splitlines()[0]
    assert DOUBLE_CHARGE_PR in out["answer"].split("From the sources")[0]
    # The September PRs that are not about it are counted, not listed as the answer.
    if out["topic_match"]["of"] > 1:
        assert first_line.startswith("About “") and f"1 of the {out['topic_match']['of']} pull requests" in first_line
        assert "acme/payments#1384" not in out["answer"]  # a topic-blind September PR (nightly ETL)


def test_the_demo_topic_drops_the_repository_the_query_filters_on(sample_dir):
    out = _ask(sample_dir, "what happened with the duplicate charges in payments in September?")
    assert out["topic_match"]["topic"] == "duplicate charges"
    assert out["topic_match"]["of"] == 12
    assert "linked with" in out["topic_match"]["why"][DOUBLE_CHARGE_PR]
    # The words the structured plan could not read are the topic the answer was narrowed by, not ignored.
    assert "did not understand" not in out["answer"] and out["not_understood"] == []
    assert any(s["how"] == "topic" and "duplicate charges" in s["text"] for s in out["understood"])


def test_merged_prs_about_the_session_cache_in_june(sample_dir):
    out = _ask(sample_dir, "PRs merged in infra in June about the session cache")
    assert [r["ref"] for r in out["records"]] == [STORIES["redis_session_cache"]["pr"]]


def test_no_row_about_the_topic_is_said_not_listed(sample_dir):
    out = _ask(sample_dir, "what happened with the quantum teleportation in payments in September?")
    assert out["route"] == "hybrid" and out["records"] == []
    assert out["answer"].startswith("None of the 12 pull requests the query found is about “quantum teleportation”.")
    assert "acme/payments#13" not in out["answer"]
    one = _ask(sample_dir, "what happened with the quantum teleportation in the PR acme/payments#1384?")
    assert one["topic_match"]["of"] == 1 and one["records"] == []
    assert one["answer"].startswith("The pull request the query found is not about “quantum teleportation”.")


ROWS = [
    {"ref": "r#1", "title": "Fix duplicate charges on retry", "repo": "acme/payments"},
    {"ref": "r#2", "title": "Guard webhooks against duplicate events", "repo": "acme/payments"},
    {"ref": "r#3", "title": "修复支付回调的问题", "repo": "acme/payments"},
    {"ref": "r#4", "title": "Bump pydantic", "repo": "acme/payments"},
]
PIPELINE = [{"$match": {"repo": "acme/payments"}}]


def _no_links(refs):
    return []


def test_one_topic_word_of_two_is_not_the_topic():
    match = match_topic("duplicate charges", ROWS, ["title"], PIPELINE, [], _no_links)
    assert match.matched == ["r#1"]  # "duplicate events" shares a word, not the topic


def test_a_row_linked_to_a_hit_about_the_topic_matches_only_when_the_hit_is_about_it():
    hits = [
        {"doc_ref": "DOC-9", "text": "Postmortem: unrelated outage"},
        {"doc_ref": "DOC-31", "text": "Postmortem: duplicate charges from retried callbacks"},
    ]
    seen = []

    def linked(refs):
        seen.append(list(refs))
        return [("DOC-31", "r#3"), ("DOC-9", "r#4"), ("DOC-31", "elsewhere#7")]

    match = match_topic("duplicate charges", ROWS, ["title"], PIPELINE, hits, linked)
    assert seen == [["DOC-31"]]  # only hits about the topic are followed
    assert match.matched == ["r#1", "r#3"]  # the row's own words first, then the linked row
    assert "elsewhere#7" not in match.matched  # a link never adds a record the query did not return


def test_words_the_query_filters_on_are_not_topic_words():
    # The full-text words are the topic, not a filter; values inside operators are.
    assert filter_words(
        [
            {
                "$match": {
                    "repo": "acme/payments",
                    "$text": {"$search": "charges"},
                    "labels.name": {"$in": ["bug"]},
                    "merged_at": {"$gte": "x"},
                }
            }
        ]
    ) == {"acm", "payment", "bug", "repo", "label", "name", "merg", "at", "x"}
    match = match_topic("payments", ROWS, ["title", "repo"], PIPELINE, [], _no_links)
    assert match.matched == ["r#1", "r#2", "r#3", "r#4"]  # the topic is the filter itself: every row


def test_the_planner_full_text_words_are_the_topic():
    pipeline = [{"$match": {"$text": {"$search": "重复扣款"}}}]
    rows = [{"ref": "a", "title": "修复支付回调的重复扣款问题"}, {"ref": "b", "title": "支付仓库里的文档"}]
    match = match_topic("支付仓库里 重复扣款", rows, ["title"], pipeline, [], _no_links)
    assert match.words == ["重复", "扣款"] and match.matched == ["a"]


def test_a_topic_the_planner_read_as_words_of_the_subject_is_every_row_it_found():
    from context_engine.query.validate import word_pattern

    # "threads about macros started on racket": the query holds the topic's words; "started" (a thread's start,
    # read as a condition) left in the router's topic narrows nothing
    pipeline = [{"$match": {"workspace": "racket", "text": {"$regex": word_pattern(["macro", "macros"])}}}]
    rows = [{"ref": "a", "text": "a reader macro"}, {"ref": "b", "text": "macros are hygienic"}]
    match = match_topic("macros started", rows, ["text"], pipeline, [], _no_links)
    assert match.matched == ["a", "b"]


def test_a_list_of_the_askers_records_is_not_narrowed_to_its_wording(sample_dir):
    # "working" is left over by the router, but the question names no subject: the rows stay.
    out = _ask(sample_dir, "what am I working on?", user="rsh-dev")
    assert out["route"] == "hybrid" and not out.get("topic_match") and len(out["records"]) > 3


# Advice questions: "I"/"we" is anyone, not a filter on the asker's records.


@pytest.mark.parametrize(
    "question",
    [
        "what should I do when a payment callback is retried?",
        "how do I roll back a deploy?",
        "how do we deploy the api?",
        "where can I find the ADRs?",
        "我应该怎么处理支付回调重试？",
    ],
)
@pytest.mark.parametrize("user", ["rsh-dev", ""])
def test_advice_questions_are_not_filtered_by_the_asker(sample_dir, settings, question, user):
    from context_engine.query.engine import resolve
    from context_engine.resources import catalog_for
    from tests.conftest import NOW as now

    catalog = catalog_for(settings)
    ctx, failed = resolve(question, now, catalog, catalog.directory.asker(user) if user else None)
    assert failed is None and ctx is not None
    assert not any(m.is_asker for m in ctx.mentions)
    if user:
        out = _ask(sample_dir, question, user=user)
        assert not any("rsh-dev" in str(q.get("pipeline")) for q in out["queries"])


@pytest.mark.parametrize(
    "question",
    ["what did I merge last week?", "my open PRs", "PRs assigned to me", "issues I reported", "我上周合并了哪些PR？"],
)
def test_first_person_filters_still_need_the_asker(settings, question):
    from context_engine.query.engine import resolve
    from context_engine.resources import catalog_for
    from tests.conftest import NOW as now

    catalog = catalog_for(settings)
    ctx, failed = resolve(question, now, catalog, catalog.directory.asker("rsh-dev"))
    assert failed is None and any(m.is_asker and m.person.key == "rsh-dev" for m in ctx.mentions)
    ctx, failed = resolve(question, now, catalog, None)
    assert ctx is None and "no asker is set" in failed.message


# "who owns X?": the documents that say so, never a structured guess.


def test_who_owns_is_answered_from_the_document_that_says_so(sample_dir):
    out = _ask(sample_dir, "who owns the session cache?")
    assert out["route"] == "semantic" and not out["declined"]
    assert "Owner: Rashid Khan" in out["answer"]
    assert [c["id"] for c in out["citations"]] == [STORIES["redis_session_cache"]["doc"]]


@pytest.mark.parametrize("question", ["who owns payments?", "who is the owner of the payments repo?"])
def test_who_owns_without_a_statement_is_no_query_guess(sample_dir, question):
    out = _ask(sample_dir, question)
    assert out["route"] == "semantic"
    assert not any(q.get("pipeline") for q in out["queries"])  # no "most frequent author" query
    assert "Owner:" not in out["answer"]


def test_ownership_statements_are_about_the_subject_and_are_not_questions():
    from langchain_core.documents import Document

    from context_engine.answering.generate import is_ownership_question, ownership_statements

    hits = [
        Document(
            "Who owns the session cache these days?\nI think Lars knows",
            id="c1",
            metadata={"doc_ref": "C1:1", "title": "#infra"},
        ),
        Document(
            "Status: Accepted · Owner: Priya\nWe use dbt.",
            id="c2",
            metadata={"doc_ref": "DOC-6", "title": "ADR-006: Use dbt for warehouse transformations"},
        ),
        Document(
            "## Open questions\nOwnership after launch.",
            id="c3",
            metadata={"doc_ref": "DOC-19", "title": "RFC: the session cache rollout"},
        ),
        Document(
            "**Owner:** Rashid Khan\nThe session cache lives in Redis.",
            id="c4",
            metadata={"doc_ref": "DOC-14", "title": "ADR-007: Use Redis for the session cache"},
        ),
    ]
    found = ownership_statements("who owns the session cache?", hits)
    assert [d.metadata["doc_ref"] for d in found] == ["DOC-14"] and found[0].page_content == "Owner: Rashid Khan"
    assert is_ownership_question("会话缓存谁负责？") and is_ownership_question("who's the owner of billing?")
    assert not is_ownership_question("PRs Rashid owns") and not is_ownership_question("who merged the most PRs")

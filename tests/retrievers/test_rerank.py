"""The rerankers: ordering behaviour, nothing dropped or repeated, and the unavailable cross-encoder."""

import os
import subprocess
import sys

import pytest
from langchain_core.documents import Document

from context_engine.config import Settings
from context_engine.retrievers.rerank import (
    OFFLINE_FEATURES,
    NoReranker,
    OfflineReranker,
    OfflineWeights,
    RerankerError,
    make_reranker,
    offline_features,
)

QUERY = "redis session cache eviction"


def hit(chunk_id: str, text: str, title: str | None = None, ranks: dict | None = None) -> Document:
    return Document(
        page_content=text,
        id=chunk_id,
        metadata={
            "chunk_id": chunk_id,
            "doc_ref": chunk_id,
            "collection": "documents",
            "title": title,
            "url": None,
            "author": None,
            "date": None,
            "position": 0,
            "score": 0.0,
            "retriever": "hybrid",
            "ranks": ranks or {},
        },
    )


HITS = [
    hit("kafka", "The Kafka consumers lagged behind on twelve partitions.", "Kafka lag", {"bm25": 1}),
    hit("ci", "CI runners ran out of disk space because of Docker layer caches.", "CI disk", {"dense": 1}),
    hit(
        "redis",
        "The Redis session cache evicts keys with an LRU eviction policy.",
        "Redis session cache",
        {"bm25": 2, "dense": 2},
    ),
    hit("structured", "PR acme/infra#812 merged by rsh-dev", None),  # a structured row: no ranks, no title
]


def ids(docs):
    return [d.id for d in docs]


def only(**weights) -> OfflineWeights:
    """Offline weights that are zero except for the given features."""
    return OfflineWeights(**{**dict.fromkeys(OFFLINE_FEATURES, 0.0), **weights})


def test_none_keeps_the_fused_order():
    out = make_reranker(Settings(reranker="none")).rerank(QUERY, HITS)
    assert ids(out) == ids(HITS)
    scores = [d.metadata["rerank_score"] for d in out]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert ids(NoReranker().rerank(QUERY, HITS, top_n=2)) == ["kafka", "ci"]
    assert "rerank_score" not in HITS[0].metadata  # the input hits are not modified


@pytest.mark.parametrize(
    "weights", [OfflineWeights(), only(words=1.0), only(fused=0.2, bm25=1.0, dense=1.0, title=2.0)]
)
def test_offline_never_drops_or_repeats(weights):
    reranker = OfflineReranker(weights)
    out = reranker.rerank(QUERY, HITS)
    assert sorted(ids(out)) == sorted(ids(HITS)) and len(out) == len(HITS)
    assert ids(reranker.rerank(QUERY, HITS, top_n=3)) == ids(out)[:3]
    assert reranker.rerank(QUERY, []) == []


def test_offline_features_and_ordering():
    features = offline_features(QUERY, HITS)
    assert features.shape == (len(HITS), len(OFFLINE_FEATURES))
    col = {name: features[:, i] for i, name in enumerate(OFFLINE_FEATURES)}
    assert col["fused"].tolist() == pytest.approx([1.0, 1 / 1.584963, 0.5, 1 / 2.321928], rel=1e-5)
    assert col["bm25"].tolist() == pytest.approx([1.0, 0.0, 1 / 1.584963, 0.0], rel=1e-5)
    # Snowball stems: "caches" meets "cache" (the CI chunk has one query word of four)
    assert col["words"].tolist() == [0.0, 0.25, 1.0, 0.0]
    # (redis, session), (session, cache) and, stemmed, (cache, eviction) as "cache evicts" are in the text
    assert col["pairs"][2] == pytest.approx(1.0) and col["title"].tolist() == [0.0, 0.0, 0.75, 0.0]
    # Only the fused position: the fused order. Word coverage: the Redis chunk first.
    assert ids(OfflineReranker(only(fused=1.0)).rerank(QUERY, HITS)) == ids(HITS)
    assert ids(OfflineReranker(only(fused=1.0, words=1.0)).rerank(QUERY, HITS))[0] == "redis"
    # Both retrievers ranking a chunk second beats one ranking another first, when ranks count.
    assert ids(OfflineReranker(only(bm25=1.0, dense=1.0)).rerank(QUERY, HITS))[0] == "redis"


def test_the_configured_default_reranker_is_offline():
    assert isinstance(make_reranker(Settings()), OfflineReranker)


def test_unknown_reranker_and_llm_without_a_model():
    with pytest.raises(RerankerError, match="unknown reranker 'colbert'"):
        make_reranker(Settings(reranker="colbert"))
    with pytest.raises(RerankerError, match="unknown reranker"):
        make_reranker(Settings(reranker="cross-encoder:"))
    with pytest.raises(RerankerError, match="needs a chat model"):
        make_reranker(Settings(reranker="llm"))


def test_offline_reranker_does_not_import_sentence_transformers():
    code = (
        "import sys; from context_engine.config import Settings; "
        "from context_engine.retrievers.rerank import make_reranker; "
        "make_reranker(Settings(reranker='offline')).rerank('q', []); "
        "print('sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


@pytest.mark.slow
def test_cross_encoder_not_available_locally_is_a_clear_error(tmp_path):
    # No cross-encoder weights can be installed here: a path without a model and a hub name that is not
    # in the local cache must both fail at once, in one line, without trying the network.
    import importlib.util

    # Without the optional sentence-transformers (the `[minilm]` extra) the error says what to install.
    expected = (
        "not available locally" if importlib.util.find_spec("sentence_transformers") else "needs sentence-transformers"
    )
    for name in (str(tmp_path / "no-model"), "cross-encoder/ms-marco-MiniLM-L6-v2"):
        with pytest.raises(RerankerError, match=expected) as info:
            make_reranker(Settings(reranker=f"cross-encoder:{name}"))
        assert "\n" not in str(info.value)


@pytest.mark.llm
@pytest.mark.skipif(not os.environ.get("OPENAI_BASE_URL"), reason="no chat model endpoint (OPENAI_BASE_URL)")
def test_llm_reranker_moves_the_relevant_hit_up():
    from context_engine.chat_models import chat_model

    settings = Settings(reranker="llm", use_llm=True)
    reranker = make_reranker(settings, llm=chat_model(settings))
    out = reranker.rerank("How are Redis cache keys evicted?", HITS[:3])
    assert out[0].id == "redis" and out[0].metadata["rerank_score"] == 1.0
    assert sorted(ids(out)) == sorted(ids(HITS[:3]))

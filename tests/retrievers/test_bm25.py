import numpy as np
import pytest

from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.chunking import chunk_collection
from context_engine.sources.normalize import normalize
from context_engine.sources.sample import STORIES, generate
from context_engine.text import tokenize

DOCS = {
    "en1": "Switch the session cache from Memcached to Redis; evictions log users out.",
    "en2": "Redis replication gives us failover for the session store.",
    "en3": "The payment webhook retries twice after a timeout, so charges can be doubled.",
    "en4": "Dashboard loading state flickers in dark mode.",
    "en5": "Terraform state locking fails when two pipelines apply at once.",
    "en6": "Cache cache cache: the dashboard caches everything in Redis.",
    "zh1": "修复支付回调的重复扣款问题，回调处理没有校验幂等键。",
    "zh2": "会话缓存从 Memcached 迁移到 Redis，避免用户被登出。",
    "zh3": "将 CI 迁移到自托管 GitHub Actions runner，降低成本。",
    "zh4": "仪表盘在深色模式下加载时闪烁。",
}
QUERIES = [
    "redis session cache",
    "payment retries doubled charges",
    "dashboard dark mode",
    "cache cache redis",
    "重复扣款",
    "会话缓存 Redis",
    "自托管 runner",
    "nothing matches xyzzy",
    "the",
]


@pytest.fixture(scope="module")
def index():
    return BM25Index().fit(list(DOCS), DOCS.values())


def test_scores_match_rank_bm25_okapi_on_the_same_tokens(index):
    rank_bm25 = pytest.importorskip("rank_bm25")
    tokens = [tokenize(t) for t in DOCS.values()]
    reference = rank_bm25.BM25Okapi(tokens)  # k1=1.5, b=0.75, epsilon=0.25
    for query in QUERIES:
        q = index.query_tokens(query)
        np.testing.assert_allclose(index.scores_tokens(q), reference.get_scores(q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(index.scores(query), reference.get_scores(q), rtol=1e-12, atol=1e-12)
    # repeated query tokens count again, and a term in most documents gets the epsilon-floored idf
    q = ["cache", "cache", "redi"]
    np.testing.assert_allclose(index.scores_tokens(q), reference.get_scores(q), rtol=1e-12, atol=1e-12)
    common = [["a", "b"], ["a", "c"], ["a", "d"], ["b", "e"]]
    np.testing.assert_allclose(
        BM25Index().fit_tokens(list("wxyz"), common).scores_tokens(["a", "b"]),
        rank_bm25.BM25Okapi(common).get_scores(["a", "b"]),
        rtol=1e-12,
    )


def test_top_k_matches_rank_bm25_up_to_ties(index):
    rank_bm25 = pytest.importorskip("rank_bm25")
    reference = rank_bm25.BM25Okapi([tokenize(t) for t in DOCS.values()])
    ids = list(DOCS)
    for query in QUERIES:
        q = index.query_tokens(query)
        theirs = reference.get_scores(q)
        ours = index.search(query, k=3)
        expected = sorted((s for s in theirs if s > 0), reverse=True)[:3]
        assert [s for _, s in ours if s > 0] == pytest.approx(expected, rel=1e-12)
        for doc_id, score in ours:
            assert theirs[ids.index(doc_id)] == pytest.approx(score, rel=1e-12)


def test_chinese_queries_find_chinese_docs(index):
    assert index.search("重复扣款")[0][0] == "zh1"
    assert index.search("会话缓存")[0][0] == "zh2"
    assert index.search("自托管")[0][0] == "zh3"
    assert index.search("深色模式")[0][0] == "zh4"
    assert index.search("session cache Redis")[0][0] in {"en1", "en6"}


def test_search_contract(index):
    assert index.search("nothing matches xyzzy") == [] and index.search("") == []
    hits = index.search("redis")
    assert {d for d, _ in hits} == {"en1", "en2", "en6", "zh2"}  # every doc containing a query term
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.search("redis", k=2) == hits[:2] and index.search("redis", k=0) == []
    tied = BM25Index().fit_tokens(["c", "a", "b", "d"], [["x", "y"], ["x", "y"], ["x", "y"], ["z", "w"]])
    assert [d for d, _ in tied.search_tokens(["x"])] == ["c", "a", "b"]  # ties in fit order
    assert [d for d, _ in tied.search_tokens(["x"], k=2)] == ["c", "a"]
    empty = BM25Index().fit([], [])
    assert empty.search("anything") == [] and len(empty.scores("anything")) == 0


def test_lucene_idf_is_never_negative():
    tokens = [["a", "b"], ["a", "c"], ["a"], ["d"]]
    okapi = BM25Index().fit_tokens(list("wxyz"), tokens)
    lucene = BM25Index(idf="lucene").fit_tokens(list("wxyz"), tokens)
    assert np.all(lucene.idf > 0)
    assert okapi.idf[okapi.vocab["a"]] == pytest.approx(
        0.25 * np.mean([np.log(4 - n + 0.5) - np.log(n + 0.5) for n in (3, 1, 1, 1)])
    )
    with pytest.raises(ValueError):
        BM25Index(idf="tfidf")


def test_bm25_over_sample_chunks_finds_the_story_in_both_languages():
    data = generate()["acme"]
    chunks = [
        c
        for coll in ("pull_requests", "messages", "documents")
        for c in chunk_collection(coll, [normalize(coll, r) for r in data[coll]], tenant="acme")
    ]
    index = BM25Index().fit([c.id for c in chunks], (c.text for c in chunks))
    by_id = {c.id: c for c in chunks}
    top = [by_id[i].doc_ref for i, _ in index.search("重复扣款 支付回调", k=5)]
    assert STORIES["payments_double_charge"]["pr"] in top
    top = [by_id[i].doc_ref for i, _ in index.search("move the session cache from Memcached to Redis", k=5)]
    assert STORIES["redis_session_cache"]["pr"] in top

"""HybridRetriever: the langchain-tests standard retriever suite on a small real index, fusion
behaviour, the access filter, and `make_retriever` through the runtime cache."""

from __future__ import annotations

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from context_engine.assistant.retriever import make_retriever
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.resources import forget
from context_engine.retrievers.dense import make_embeddings
from context_engine.retrievers.fusion import RRF_K
from context_engine.retrievers.hybrid import HybridRetriever
from context_engine.retrievers.index import SemanticIndex

DOCS = [
    {"doc_id": "CACHE", "title": "Session cache", "body": "The session cache moved from Memcached to Redis."},
    {"doc_id": "ALERTS", "title": "Redis alerts", "body": "Alert when Redis memory passes eighty percent."},
    {"doc_id": "CHARGES", "title": "Duplicate charges", "body": "Retried payment callbacks charged customers twice."},
    {"doc_id": "RELEASE", "title": "Mobile release", "body": "The Android release train ships every second Tuesday."},
    {"doc_id": "ONCALL", "title": "Oncall handbook", "body": "Page the secondary after fifteen minutes."},
    {
        "doc_id": "SECRET",
        "title": "Incident notes",
        "body": "The Redis password leaked in a build log.",
        "acl": ["github:sokafor"],
    },
]
# Stated as the sample corpus states people (one operator record per person, all accounts in it).
PEOPLE = [
    {"login": "sokafor", "name": "Sam Okafor", "slack_id": "U0DCC75DEF", "source": "sample"},
    {"login": "zwei-dev", "name": "Zhang Wei", "slack_id": "U0BE63B36E", "source": "sample"},
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    cache = tmp_path_factory.getbasetemp() / "semantic-index-embeddings.sqlite"  # shared with test_semantic_index
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("hybrid"), mongodb_uri=None, tenant="t1", embedding_cache=cache, use_llm=False
    )
    # Documents carry no membership of their own: `public=True` is the ingest's explicit "readable by
    # the tenant"; SECRET states its own access list, which wins.
    ingest(settings, {"t1": {"documents": DOCS, "people": PEOPLE}}, public=True)
    return settings


@pytest.fixture(scope="module")
def index(settings) -> SemanticIndex:
    return SemanticIndex.load(settings, "t1", embeddings=make_embeddings(settings.embedding_model))


# pytest-asyncio runs in strict mode here and the suite forbids overriding its tests, so the class is
# marked for its one async test (test_ainvoke_returns_documents); the sync ones only warn about it.
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function test_.*is marked with '@pytest.mark.asyncio'")
class TestHybridRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _small_index(self, index):
        self.index = index

    @property
    def retriever_constructor(self) -> type[HybridRetriever]:
        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"index": self.index, "principals": (), "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "redis session cache"


def _refs(docs) -> list[str]:
    return [d.metadata["doc_ref"] for d in docs]


def test_fused_list_is_rrf_of_the_two_lists(index):
    retriever = HybridRetriever(index=index, k=5, weights=(1.0, 2.0))
    lists = retriever.search_lists("redis memory alerts")
    assert set(lists) == {"bm25", "dense"}
    assert all(d.metadata["retriever"] == "bm25" for d in lists["bm25"])
    assert all(d.metadata["retriever"] == "dense" for d in lists["dense"])
    fused = retriever.invoke("redis memory alerts")
    assert len(fused) == 5 and _refs(fused)[0] == "ALERTS"
    assert len(set(_refs(fused))) == 5  # one entry per record
    refs = {name: list(dict.fromkeys(_refs(lists[name]))) for name in ("bm25", "dense")}
    for doc in fused:
        meta = doc.metadata
        assert meta["ranks"] == {
            name: refs[name].index(meta["doc_ref"]) + 1 for name in refs if meta["doc_ref"] in refs[name]
        }
        assert meta["retriever"] == ("hybrid" if len(meta["ranks"]) > 1 else next(iter(meta["ranks"])))
        expected = sum(
            w / (RRF_K + meta["ranks"][name]) for name, w in (("bm25", 1.0), ("dense", 2.0)) if name in meta["ranks"]
        )
        assert meta["score"] == pytest.approx(expected)
    assert [d.metadata["score"] for d in fused] == sorted((d.metadata["score"] for d in fused), reverse=True)


def test_convex_fusion_normalises_scores(index):
    fused = HybridRetriever(index=index, k=6, fusion="convex").invoke("duplicate payment charges")
    assert _refs(fused)[0] == "CHARGES" and fused[0].metadata["score"] == pytest.approx(2.0)  # top of both lists
    assert all(0.0 <= d.metadata["score"] <= 2.0 for d in fused)


def test_access_filter_is_the_principals_field(index):
    query = "redis password leaked in a build log"
    everyone = len(index)
    assert "SECRET" not in _refs(HybridRetriever(index=index, k=everyone).invoke(query))
    assert "SECRET" not in _refs(
        HybridRetriever(index=index, k=everyone, principals=("github:zwei-dev", "slack:U0BE63B36E")).invoke(query)
    )
    assert _refs(HybridRetriever(index=index, k=3, principals=("github:sokafor",)).invoke(query))[0] == "SECRET"


def test_make_retriever_reads_settings_and_sees_reingested_data(settings):
    member = settings.with_overrides(asker="sokafor", fusion="convex", retrieve_k=3)
    retriever = make_retriever(member)
    assert (retriever.k, retriever.fusion, "github:sokafor" in retriever.principals) == (3, "convex", True)
    assert _refs(retriever.invoke("redis password leaked"))[0] == "SECRET"
    assert make_retriever(settings).index is retriever.index  # loaded once per (data dir, tenant)

    ingest(
        settings,
        {
            "t1": {
                "documents": [
                    {
                        "doc_id": "RUNBOOK",
                        "title": "Failover runbook",
                        "body": "Promote the Redis replica with sentinel failover.",
                    }
                ]
            }
        },
        public=True,
    )
    forget(settings)
    fresh = make_retriever(settings)
    assert fresh.index is not retriever.index
    assert _refs(fresh.invoke("promote the replica with sentinel"))[0] == "RUNBOOK"

"""The scaled sample corpus (`eval.scale_corpus`) and the scale bench's synthetic embeddings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from context_engine.eval.scale_corpus import counts, generate_scaled
from context_engine.sources.sample import generate


@pytest.fixture(scope="module")
def small():
    return generate_scaled(2_400, messages=3_001, seed=7)


def test_same_seed_same_records(small):
    again = generate_scaled(2_400, messages=3_001, seed=7)
    assert json.dumps(again, sort_keys=True, default=str) == json.dumps(small, sort_keys=True, default=str)
    other = generate_scaled(2_400, messages=3_001, seed=8)
    assert json.dumps(other, sort_keys=True, default=str) != json.dumps(small, sort_keys=True, default=str)


def test_sizes_as_asked(small):
    n = counts(small)
    assert n["pull_requests"] == 1_200 and n["issues"] == 1_200
    assert n["messages"] == 3_001
    assert n["commits"] == sum(pr["merged"] for t in small.values() for pr in t["pull_requests"])
    with pytest.raises(ValueError):
        generate_scaled(100)  # below the sample's own counts


def test_the_sample_is_inside_unchanged(small):
    base = generate(7)
    assert small["globex"] == base["globex"]
    for name, records in base["acme"].items():
        assert small["acme"][name][: len(records)] == records or name == "messages"
    # messages are re-sorted by time: every sample message is still there, unchanged
    ours = {(m["channel"], m["ts"]): m for m in small["acme"]["messages"]}
    assert all(ours[(m["channel"], m["ts"])] == m for m in base["acme"]["messages"])


def test_keys_are_unique_and_threads_consistent(small):
    acme = small["acme"]
    assert len({(p["base"]["repo"]["full_name"], p["number"]) for p in acme["pull_requests"]}) == len(
        acme["pull_requests"]
    )
    assert len({i["key"] for i in acme["issues"]}) == len(acme["issues"])
    assert len({(m["channel"], m["ts"]) for m in acme["messages"]}) == len(acme["messages"])
    replies: dict[str, int] = {}
    for m in acme["messages"]:
        if m.get("thread_ts") and m["thread_ts"] != m["ts"]:
            replies[m["thread_ts"]] = replies.get(m["thread_ts"], 0) + 1
    for m in acme["messages"]:
        if m.get("thread_ts") == m["ts"]:
            assert m["reply_count"] == replies.get(m["ts"], 0) > 0


def test_synthetic_embeddings_are_deterministic_unit_vectors():
    from context_engine.eval.scale_bench import DIM, SyntheticEmbeddings

    a = SyntheticEmbeddings().encode_documents(["Redis session cache", "refund flow retries", ""])
    b = SyntheticEmbeddings().encode_documents(["Redis session cache", "refund flow retries", ""])
    assert a.shape == (3, DIM) and np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    near = SyntheticEmbeddings().encode_documents(["the Redis session cache"])[0]
    assert near @ a[0] > near @ a[1]


def test_generated_corpus_ingests_and_answers(tmp_path, monkeypatch):
    from context_engine.assistant.graph import graph
    from context_engine.config import Settings
    from context_engine.eval.scale_bench import NOW, SyntheticEmbeddings
    from context_engine.ingest import ingest
    from context_engine.retrievers import index as index_module

    monkeypatch.setattr(index_module, "make_embeddings", lambda name, **_: SyntheticEmbeddings())
    data = generate_scaled(2_000, messages=1_500, seed=3)
    settings = Settings(
        data_dir=tmp_path,
        mongodb_uri=None,
        embedding_model=SyntheticEmbeddings.name,
        embedding_cache=tmp_path / "cache.sqlite",
        use_llm=False,
    )
    reports = ingest(settings, data)
    acme = next(r for r in reports if r.tenant == "acme")
    assert acme.records >= 2_000 and acme.index.chunks > 2_000 and acme.index.embedded == acme.index.chunks
    out = graph.invoke(
        {"question": "how many open PRs are labelled security?", "now": NOW},
        context={"data_dir": str(tmp_path), "tenant": "acme", "user": "rsh-dev", "use_llm": False},
    )
    assert out["route"] == "structured" and not out.get("declined")
    assert "pull requests match" in out["answer"]


def test_the_bench_hands_each_record_over_once_in_order_and_keeps_none():
    from context_engine.eval.scale_bench import _handed_over

    data = {"acme": {"messages": [{"ts": "1"}, {"ts": "2"}, {"ts": "3"}], "issues": []}}
    messages = data["acme"]["messages"]
    streams = _handed_over(data)["acme"]
    assert [m["ts"] for m in streams["messages"]] == ["1", "2", "3"] and list(streams["issues"]) == []
    assert messages == []  # the generated list let go of every record it handed over

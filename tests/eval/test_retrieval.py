"""`eval retrieval` on a tiny BEIR folder written here: metrics by hand, the CLI's JSON and exit codes."""

import gzip
import json
import math
from pathlib import Path

import pytest

from context_engine.config import Settings
from context_engine.eval.retrieval import (
    FUSION_GRID,
    METRICS,
    RUNS,
    BeirInputError,
    evaluate_retrieval,
    mean_metrics,
    mrr_at,
    tune,
)
from tests.conftest import run_cli

CORPUS = [
    ("d1", "Redis session cache", "We moved the user session cache from memcached to a Redis cluster last spring."),
    ("d2", "Kafka consumer lag", "The billing consumer group lagged behind on twelve partitions after the deploy."),
    ("d3", "Postgres autovacuum", "Autovacuum thresholds were lowered for the large orders table."),
    ("d4", "Cache eviction policy", "Keys in Redis are evicted with an LRU policy when memory runs out."),
    ("d5", "Flaky integration tests", "Each integration test now runs inside its own rolled back transaction."),
    ("d6", "Rate limits", "The public API allows one hundred requests per minute per key."),
    ("d7", "Disk space on CI runners", "Docker layer caches filled the disks of the CI runners every week."),
    ("d8", "On-call paging", "PagerDuty pages the on-call engineer when checkout latency stays high."),
]
QUERIES = {
    "q1": "redis session cache",
    "q2": "kafka consumer lag",
    "q3": "autovacuum thresholds",
    "q9": "a query nobody judged",
}
TRAIN = [("q1", "d4", 1), ("q2", "d2", 1)]
TEST = [("q3", "d3", 1)]


@pytest.fixture(scope="module")
def beir_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("beir")
    with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        for doc_id, title, text in CORPUS:
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (root / "qrels").mkdir()
    for split, rows in (("train", TRAIN), ("test", TEST)):
        (root / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)
        )
    return root


@pytest.fixture(scope="module")
def embed_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache") / "embeddings.sqlite"


def test_metrics_match_hand_computed_values():
    ranked = ["a", "b", "c"]
    rel = {"b": 2, "c": 1, "z": 1}
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert mrr_at(ranked, rel) == 0.5
    assert mrr_at(ranked, rel, k=1) == 0.0
    metrics = mean_metrics({"q": ranked, "r": ["z"]}, {"q": rel, "r": {"z": 1, "y": 1}})
    assert metrics == {
        "ndcg@10": round((dcg / idcg + 1 / (1 + 1 / math.log2(3))) / 2, 4),
        "recall@10": round((2 / 3 + 1 / 2) / 2, 4),
        "recall@100": round((2 / 3 + 1 / 2) / 2, 4),
        "mrr@10": round((0.5 + 1.0) / 2, 4),
    }


def test_evaluate_on_a_tiny_corpus(beir_dir, embed_cache, tmp_path):
    settings = Settings(data_dir=tmp_path, embedding_cache=embed_cache, mongodb_uri=None, use_llm=False)
    report = evaluate_retrieval(beir_dir, "train", settings)
    assert list(report) == list(RUNS) and all(list(m) == list(METRICS) for m in report.values())
    # BM25 by hand: q1 "redis session cache" ranks d1 (all three words) above d4 (redis, cache), and d4
    # is the judged one: nDCG 1/log2(3), MRR 1/2; q2 puts d2 first. Both find their document in the top 10.
    assert report["bm25"] == {
        "ndcg@10": round((1 / math.log2(3) + 1) / 2, 4),
        "recall@10": 1.0,
        "recall@100": 1.0,
        "mrr@10": 0.75,
    }
    assert all(0.0 <= v <= 1.0 for run in report.values() for v in run.values())
    assert report["dense"]["recall@10"] == 1.0  # eight documents: everything is in the top 10


def test_bad_input_is_a_one_line_error(beir_dir, tmp_path):
    settings = Settings(data_dir=tmp_path, mongodb_uri=None)
    with pytest.raises(BeirInputError, match=r"unknown split 'dev'.*test, train"):
        evaluate_retrieval(beir_dir, "dev", settings)
    with pytest.raises(BeirInputError, match="no such directory"):
        evaluate_retrieval(tmp_path / "missing", "train", settings)
    with pytest.raises(BeirInputError, match="refusing to tune on the test split"):
        tune(beir_dir, "test", settings)


def test_cli_json_shape_second_run_loads_the_index(beir_dir, embed_cache, tmp_path):
    env = {"CONTEXT_ENGINE_EMBED_CACHE": str(embed_cache)}
    args = ("eval", "retrieval", "--beir", str(beir_dir), "--data-dir", str(tmp_path), "--json")
    first = run_cli(*args, "--split", "train", env=env)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert set(report) == set(RUNS) and all(set(m) == set(METRICS) for m in report.values())
    assert "indexing 8 chunks" in first.stderr
    second = run_cli(*args, "--split", "test", env=env)
    assert second.returncode == 0, second.stderr
    assert "loading the indexes of 8 chunks" in second.stderr
    # q3 "autovacuum thresholds" has a single judged document that BM25 ranks first.
    assert json.loads(second.stdout)["bm25"] == {"ndcg@10": 1.0, "recall@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}


def test_cli_table_and_exit_codes(beir_dir, embed_cache, tmp_path):
    env = {"CONTEXT_ENGINE_EMBED_CACHE": str(embed_cache)}
    table = run_cli(
        "eval",
        "retrieval",
        "--beir",
        str(beir_dir),
        "--split",
        "train",
        "--data-dir",
        str(tmp_path),
        "--limit",
        "1",
        env=env,
    )
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].split() == ["run", *METRICS] and [line.split()[0] for line in lines[2:]] == list(RUNS)
    for bad, message in (
        ((str(tmp_path / "nope"), "train"), "no such directory"),
        ((str(beir_dir), "dev"), "unknown split 'dev'"),
        ((str(tmp_path), "train"), "no corpus.jsonl"),
    ):
        out = run_cli("eval", "retrieval", "--beir", bad[0], "--split", bad[1], "--data-dir", str(tmp_path), env=env)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    missing = run_cli("eval", "retrieval", "--beir", str(beir_dir), env=env)
    assert missing.returncode == 2 and "--split" in missing.stderr


def test_tune_reports_the_grids_and_never_loses_to_the_fused_order(beir_dir, embed_cache, tmp_path):
    settings = Settings(data_dir=tmp_path, embedding_cache=embed_cache, mongodb_uri=None, use_llm=False)
    report = tune(beir_dir, "train", settings)
    assert len(report["fusions"]) == len(FUSION_GRID) and report["best_fusion"] in report["fusions"]
    fused = report["fused_order"]
    assert (fused["fused"], fused["bm25"], fused["dense"], fused["words"], fused["pairs"], fused["title"]) == (
        1,
        0,
        0,
        0,
        0,
        0,
    )
    best = report["offline_top"][0]
    assert best["ndcg@10"] >= fused["ndcg@10"]
    assert [r["ndcg@10"] for r in report["offline_top"]] == sorted(
        (r["ndcg@10"] for r in report["offline_top"]), reverse=True
    )

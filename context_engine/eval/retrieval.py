"""Retrieval quality on a BEIR data set: `context-engine eval retrieval --beir DIR --split SPLIT`.

The corpus is chunked as the engine chunks documents (`chunk_document(_id, title, text,
tenant="beir")`); the engine's BM25 (`index.fit_bm25`) and the dense index both take
`embedding_text(chunk)`, embedded through `CachedEmbeddings` (cache at
`settings.embedding_cache_path`). Both indexes and the query vectors are kept under
`<data_dir>/beir/<corpus>-<fingerprint>/`, so a second run (another split, a changed setting) only
embeds its new queries. A document scores as its best chunk.

Runs, each ranking up to `DEPTH` documents per query:

- ``bm25``, ``dense``: one retriever, `CHUNK_DEPTH` chunks deep.
- ``hybrid``: the two lists fused per Settings (fusion, weights, rrf_k).
- ``reranked``: the hybrid list with its first `rerank_k` hits reordered by Settings' reranker.
- ``default``: what the engine does when answering: `retrieve_k` chunks per retriever, fused and
  reranked per Settings.

Metrics: nDCG@10, recall@10, recall@100, MRR@10 (means over the split's judged queries).

`python -m context_engine.eval.retrieval --beir DIR --split train` (`tune`) measures fusions
(`FUSION_GRID`) on the engine's `retrieve_k`-deep lists and fits the offline reranker's weights
(`OFFLINE_GRID`, each with every `RERANK_K_GRID`) on the default run: the numbers behind the
defaults in `config.py` and `rerank.OfflineWeights`. It refuses the test split: defaults are never
tuned on test.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document

from context_engine.access import PUBLIC
from context_engine.config import Settings
from context_engine.eval.beir import load_beir, ndcg_at, read_corpus, recall_at
from context_engine.retrievers.bm25 import BM25Index
from context_engine.retrievers.chunking import Chunk, chunk_document, embedding_text
from context_engine.retrievers.dense import DenseIndex, make_embeddings
from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache
from context_engine.retrievers.fusion import FUSIONS, fuse_hits
from context_engine.retrievers.index import fit_bm25
from context_engine.retrievers.rerank import OFFLINE_FEATURES, OfflineWeights, Reranker, make_reranker, offline_features
from context_engine.text import TOKENIZATION

__all__ = [
    "CHUNK_DEPTH",
    "DEPTH",
    "METRICS",
    "RUNS",
    "BeirIndex",
    "BeirInputError",
    "evaluate_retrieval",
    "mean_metrics",
    "mrr_at",
    "open_beir_index",
    "tune",
]

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
RUNS = ("bm25", "dense", "hybrid", "reranked", "default")
DEPTH = 100  # documents ranked per query: enough for recall@100
# Chunks asked of each retriever for the full-depth runs: a document may own several chunks, so
# more than DEPTH chunks are needed to rank DEPTH documents (SciFact: 1.12 chunks per document).
CHUNK_DEPTH = 3 * DEPTH

Progress = Callable[[str], None]


class BeirInputError(ValueError):
    """A missing folder or file, or an unknown split: reported in one line."""


# ---------------------------------------------------------------------------------------- metrics
def mrr_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the first k (0 when none)."""
    return next((1.0 / i for i, d in enumerate(ranked[:k], start=1) if d in rel), 0.0)


def mean_metrics(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """The means of METRICS over the queries of `rankings` (query id -> documents, best first)."""
    per_query = [
        (ndcg_at(r, qrels[q], 10), recall_at(r, qrels[q], 10), recall_at(r, qrels[q], 100), mrr_at(r, qrels[q], 10))
        for q, r in rankings.items()
    ]
    means = np.mean(per_query, axis=0) if per_query else np.zeros(len(METRICS))
    return {name: round(float(v), 4) for name, v in zip(METRICS, means)}


# ---------------------------------------------------------------------------------------- index
def check_beir_folder(root: Path, split: str) -> None:
    """Raise BeirInputError unless `root` is a BEIR folder with judgements for `split`."""
    if not root.is_dir():
        raise BeirInputError(f"{root}: no such directory")
    if not ((root / "corpus.jsonl.gz").is_file() or (root / "corpus.jsonl").is_file()):
        raise BeirInputError(f"{root}: no corpus.jsonl or corpus.jsonl.gz")
    if not (root / "queries.jsonl").is_file():
        raise BeirInputError(f"{root}: no queries.jsonl")
    if not (root / "qrels" / f"{split}.tsv").is_file():
        known = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise BeirInputError(f"unknown split {split!r}: {root / 'qrels'} has {', '.join(known) or 'no .tsv files'}")


@dataclass
class BeirIndex:
    chunks: dict[str, Chunk]  # chunk id -> chunk
    bm25: BM25Index
    dense: DenseIndex
    embeddings: CachedEmbeddings
    query_cache: EmbeddingCache  # query vectors, under the model's cache key + ":query"
    directory: Path

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit query vectors, from the index's query cache when seen before."""
        model = f"{self.embeddings.key}:query"
        cached = self.query_cache.get(model, texts)
        missing = [i for i in range(len(texts)) if i not in cached]
        if missing:
            vectors = np.stack([self.embeddings.encode_query(texts[i]) for i in missing])
            self.query_cache.put(model, [texts[i] for i in missing], vectors)
            cached.update(zip(missing, vectors))
        return np.stack([cached[i] for i in range(len(texts))]) if texts else np.zeros((0, 0), np.float32)


def _fingerprint(model: str, chunks: list[Chunk]) -> str:
    """What the kept indexes were built from: the model, how BM25 tokenizes, and the chunks."""
    digest = hashlib.sha1(f"{model}\0{TOKENIZATION}\0bm25 lucene over embedding_text".encode())
    for chunk in chunks:
        digest.update(f"\0{chunk.id}\0{chunk.text}\0{embedding_text(chunk)}".encode())
    return digest.hexdigest()[:16]


def open_beir_index(root: Path, settings: Settings, progress: Progress | None = None) -> BeirIndex:
    """Chunk the corpus of `root`, then load its indexes from the data dir or build (and save) them."""
    say = progress or (lambda message: None)
    chunks = [
        chunk
        for doc in read_corpus(root)
        for chunk in chunk_document(str(doc["_id"]), doc.get("title"), doc.get("text", ""), tenant="beir", acl=[PUBLIC])
    ]
    embeddings = CachedEmbeddings(
        make_embeddings(settings.embedding_model), EmbeddingCache(settings.embedding_cache_path)
    )
    directory = settings.data_dir / "beir" / f"{root.resolve().name}-{_fingerprint(embeddings.key, chunks)}"
    bm25_path, dense_path = directory / "bm25.npz", directory / "dense"
    if bm25_path.is_file() and (dense_path / "meta.json").is_file():
        say(f"loading the indexes of {len(chunks):,} chunks from {directory}")
        bm25 = BM25Index.load(bm25_path, [c.id for c in chunks])
        dense = DenseIndex.load(dense_path)
    else:
        directory.mkdir(parents=True, exist_ok=True)
        say(f"indexing {len(chunks):,} chunks into {directory}")
        bm25 = fit_bm25([c.id for c in chunks], [embedding_text(c) for c in chunks])
        say(f"bm25: {len(bm25.vocab):,} terms; dense: {embeddings.name}, cache {settings.embedding_cache_path}")
        vectors = embeddings.encode_documents(
            [embedding_text(c) for c in chunks],
            on_progress=lambda done, total: say(f"embedded {done:,}/{total:,} new chunks"),
        )
        say(f"dense: {embeddings.hits:,} cached vectors, {embeddings.misses:,} embedded")
        dense = DenseIndex(info={"model": embeddings.name})
        dense.add([c.id for c in chunks], vectors)
        dense.save(dense_path)
        # The BM25 file is written last and atomically: its presence marks a complete index.
        tmp = bm25_path.with_name(f"bm25.tmp-{os.getpid()}.npz")
        bm25.save(tmp)
        os.replace(tmp, bm25_path)
    return BeirIndex(
        {c.id: c for c in chunks}, bm25, dense, embeddings, EmbeddingCache(directory / "queries.sqlite"), directory
    )


# ---------------------------------------------------------------------------------------- runs
Ranked = list[tuple[str, float]]


def fuse(settings: Settings, index: BeirIndex, bm25: Ranked, dense: Ranked) -> list[dict[str, Any]]:
    """The two chunk lists fused as the engine fuses them (`fusion.fuse_hits`: per document, as
    Settings say): hits with the document's best chunk as `id`, the fused `score` and `ranks`."""
    if settings.fusion not in FUSIONS:
        raise BeirInputError(f"unknown fusion {settings.fusion!r}: use {' or '.join(FUSIONS)}")
    lists = {
        name: [
            {"id": chunk_id, "doc_ref": index.chunks[chunk_id].doc_ref, "score": score} for chunk_id, score in ranked
        ]
        for name, ranked in (("bm25", bm25), ("dense", dense))
    }
    return fuse_hits(
        lists, settings.fusion, {"bm25": settings.bm25_weight, "dense": settings.dense_weight}, settings.rrf_k
    )


def fused_hits(index: BeirIndex, fused: list[dict[str, Any]]) -> list[Document]:
    """Fused hits as the hybrid retriever's Documents (score, ranks per list)."""
    hits = []
    for hit in fused:
        chunk = index.chunks[hit["id"]]
        hits.append(
            Document(
                page_content=chunk.text,
                id=hit["id"],
                metadata={
                    "chunk_id": hit["id"],
                    "doc_ref": chunk.doc_ref,
                    "collection": chunk.collection,
                    "title": chunk.title,
                    "url": chunk.url,
                    "author": chunk.author,
                    "date": None,
                    "position": chunk.position,
                    "score": hit["score"],
                    "retriever": "hybrid",
                    "ranks": hit["ranks"],
                },
            )
        )
    return hits


def documents_of(chunk_ids: Sequence[str], index: BeirIndex) -> list[str]:
    """Document ids in the order of their best chunk, at most DEPTH."""
    return list(dict.fromkeys(index.chunks[c].doc_ref for c in chunk_ids))[:DEPTH]


def rerank_head(reranker: Reranker, index: BeirIndex, query: str, fused: list[dict[str, Any]], top: int) -> list[str]:
    """Chunk ids: the first `top` fused hits reordered by the reranker, then the rest in fused order."""
    head = reranker.rerank(query, fused_hits(index, fused[:top]), top_n=top)
    return [h.id for h in head] + [hit["id"] for hit in fused[top:]]


@dataclass
class QueryLists:
    text: str
    bm25: Ranked
    dense: Ranked


def retrieve_all(index: BeirIndex, queries: dict[str, str], progress: Progress | None = None) -> dict[str, QueryLists]:
    """Each query's BM25 and dense chunk lists, CHUNK_DEPTH deep."""
    say = progress or (lambda message: None)
    ids = list(queries)
    say(f"embedding {len(ids):,} queries (cached in {index.query_cache.path})")
    vectors = index.query_vectors([queries[q] for q in ids])
    say(f"searching {len(ids):,} queries")
    return {
        q: QueryLists(queries[q], index.bm25.search(queries[q], CHUNK_DEPTH), index.dense.search(v, CHUNK_DEPTH))
        for q, v in zip(ids, vectors)
    }


def run_rankings(
    index: BeirIndex, lists: dict[str, QueryLists], settings: Settings, reranker: Reranker
) -> dict[str, dict[str, list[str]]]:
    """run name -> query id -> ranked document ids, for every run of RUNS."""
    runs: dict[str, dict[str, list[str]]] = {name: {} for name in RUNS}
    for q, ql in lists.items():
        runs["bm25"][q] = documents_of([c for c, _s in ql.bm25], index)
        runs["dense"][q] = documents_of([c for c, _s in ql.dense], index)
        hybrid = fuse(settings, index, ql.bm25, ql.dense)
        runs["hybrid"][q] = documents_of([hit["id"] for hit in hybrid], index)
        runs["reranked"][q] = documents_of(rerank_head(reranker, index, ql.text, hybrid, settings.rerank_k), index)
        engine = fuse(settings, index, ql.bm25[: settings.retrieve_k], ql.dense[: settings.retrieve_k])
        runs["default"][q] = documents_of(rerank_head(reranker, index, ql.text, engine, settings.rerank_k), index)
    return runs


def _load(root: Path, split: str, limit: int | None) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    check_beir_folder(root, split)
    _corpus, queries, qrels = load_beir(root, split)
    if limit is not None:
        queries = dict(list(queries.items())[:limit])
    return queries, {q: qrels[q] for q in queries}


def evaluate_retrieval(
    root: Path,
    split: str,
    settings: Settings,
    *,
    limit: int | None = None,
    llm: Any = None,
    progress: Progress | None = None,
) -> dict[str, dict[str, float]]:
    """{run: {metric: mean}} over the judged queries of `split` (the first `limit` of them)."""
    queries, qrels = _load(root, split, limit)
    reranker = make_reranker(settings, llm=llm)
    index = open_beir_index(root, settings, progress)
    lists = retrieve_all(index, queries, progress)
    if progress:
        progress(f"ranking: fusion {settings.fusion}, reranker {settings.reranker} over the first {settings.rerank_k}")
    return {
        name: mean_metrics(rankings, qrels) for name, rankings in run_rankings(index, lists, settings, reranker).items()
    }


# ---------------------------------------------------------------------------------------- tuning
FUSION_GRID: list[dict[str, Any]] = [
    {"fusion": "rrf", "rrf_k": k, "bm25_weight": 1.0, "dense_weight": w}
    for k in (20, 60, 100)
    for w in (0.5, 0.75, 1.0, 1.5, 2.0)
] + [{"fusion": "convex", "bm25_weight": round(1 - w, 2), "dense_weight": w} for w in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)]
RERANK_K_GRID = (10, 20, 30, 50)
# The fused position keeps weight 1, so the first point (all others 0) is the fused order itself.
OFFLINE_GRID: list[OfflineWeights] = [
    OfflineWeights(fused=1.0, bm25=b, dense=d, words=w, pairs=p, title=t)
    for b, d, w, p, t in itertools.product(
        (0.0, 0.5, 1.0), (0.0, 0.5, 1.0), (0.0, 0.5, 1.0, 2.0), (0.0, 0.5, 1.0), (0.0, 0.5)
    )
]


def tune(
    root: Path, split: str, settings: Settings, *, limit: int | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Every FUSION_GRID point on the engine's lists (`retrieve_k` chunks per retriever, no reranker);
    then, with the best fusion, every OFFLINE_GRID x RERANK_K_GRID point on the default run.
    Returns the tables and the winners (by nDCG@10)."""
    if split == "test":
        raise BeirInputError("refusing to tune on the test split: tune on train (or dev)")
    queries, qrels = _load(root, split, limit)
    index = open_beir_index(root, settings, progress)
    lists = retrieve_all(index, queries, progress)
    fusions = []
    for point in FUSION_GRID:
        s = replace(settings, **point)
        rankings = {
            q: documents_of(
                [hit["id"] for hit in fuse(s, index, ql.bm25[: s.retrieve_k], ql.dense[: s.retrieve_k])], index
            )
            for q, ql in lists.items()
        }
        fusions.append({**point, **mean_metrics(rankings, qrels)})
        if progress:
            progress(f"fusion {point}: ndcg@10 {fusions[-1]['ndcg@10']}")
    best_fusion = max(fusions, key=lambda row: row["ndcg@10"])
    s = replace(settings, **{k: v for k, v in best_fusion.items() if k not in METRICS})
    # Features of each query's default head, computed once; each grid point is then a matrix product.
    heads = {}
    for q, ql in lists.items():
        bm25, dense = ql.bm25[: s.retrieve_k], ql.dense[: s.retrieve_k]
        fused = fuse(s, index, bm25, dense)
        heads[q] = (
            [hit["id"] for hit in fused],
            offline_features(ql.text, fused_hits(index, fused[: max(RERANK_K_GRID)])),
        )
    offline = []
    for weights in OFFLINE_GRID:
        w = weights.vector()
        for k in RERANK_K_GRID:
            rankings = {}
            for q, (ids, features) in heads.items():
                scores = features[:k] @ w
                order = np.argsort(-scores, kind="stable")
                rankings[q] = documents_of([ids[i] for i in order] + ids[k:], index)
            offline.append(
                {"rerank_k": k, **{f: getattr(weights, f) for f in OFFLINE_FEATURES}, **mean_metrics(rankings, qrels)}
            )
    # OFFLINE_GRID[0] weighs only the fused position: its rows are the fused order itself.
    return {
        "fusions": fusions,
        "best_fusion": best_fusion,
        "fused_order": offline[0],
        "offline_top": sorted(offline, key=lambda row: -row["ndcg@10"])[:10],
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m context_engine.eval.retrieval --beir DIR [--split train]`: run `tune`, print JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m context_engine.eval.retrieval",
        description="Measure the fusion grid and fit the offline reranker (never on test).",
    )
    parser.add_argument("--beir", required=True, type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    settings = Settings().with_overrides(data_dir=args.data_dir)
    try:
        report = tune(
            args.beir,
            args.split,
            settings,
            limit=args.limit,
            progress=lambda message: print(message, file=sys.stderr, flush=True),
        )
    except BeirInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Our sparse BM25 against `rank_bm25.BM25Okapi`, side by side in one run on the same tokens.

    python -m context_engine.eval.bm25_bench [--chunks 50000] [--rb-sample 50] [--runs 3]

(a) SciFact (5,183 abstracts; queries = those in qrels/train.tsv, never the test qrels): do the two
    score every document the same, do their top-10s agree (sets, order; a disagreement is
    classified as a tie/float-noise one when the two top-10 score lists are equal), and nDCG@10.
(b) Query throughput at N chunks (SciFact abstracts cut into sentence pairs, repeated with a
    suffix token until there are N): top-10 per query from pre-tokenized queries, median of
    `--runs` runs. rank_bm25 scans every document per query term, so it is timed on a sample of
    the queries (every k-th) and ours on the same sample as well as on all of them; the speed
    ratio is on the same sample.
(c) Index build time and chunks/s at N chunks: tokenizing, our index from tokens, BM25Okapi from
    the same tokens.

Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from context_engine.eval import eval_data
from context_engine.eval.beir import load_beir, ndcg_at
from context_engine.retrievers.bm25 import BM25Index
from context_engine.text import split_sentences, tokenize

SCIFACT = eval_data("scifact")


def _rb_top(rb, tokens: list[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """What BM25Okapi.get_top_n returns (argsort, reversed), with its scores; zero scores dropped."""
    scores = rb.get_scores(tokens)
    top = np.argsort(scores)[::-1][:k]
    return top[scores[top] > 0], scores


def agreement(ours: BM25Index, rb, query_tokens: list[list[str]]) -> dict[str, float | int]:
    same_set = same_order = tie_only = bit_identical = short = 0
    max_abs = max_rel = 0.0
    pos = {doc_id: i for i, doc_id in enumerate(ours.ids)}
    for tokens in query_tokens:
        a, b = ours.scores_tokens(tokens), rb.get_scores(tokens)
        bit_identical += bool(np.array_equal(a, b))
        diff = float(np.max(np.abs(a - b))) if len(a) else 0.0
        max_abs = max(max_abs, diff)
        max_rel = max(max_rel, diff / max(float(np.max(np.abs(b))), 1e-12))
        mine = [pos[d] for d, s in ours.search_tokens(tokens, 10) if s > 0]
        theirs, rb_scores = _rb_top(rb, tokens)
        theirs = theirs.tolist()
        short += len(theirs) < 10
        if set(mine) == set(theirs):
            same_set += 1
        if mine == theirs:
            same_order += 1
        elif np.allclose(sorted(rb_scores[mine]), sorted(rb_scores[theirs]), rtol=1e-12, atol=1e-12) and len(
            mine
        ) == len(theirs):
            tie_only += 1  # same score at every rank: only the order among equal scores differs
    n = max(len(query_tokens), 1)
    return {
        "queries": len(query_tokens),
        "same_top10_set_pct": 100 * same_set / n,
        "same_top10_order_pct": 100 * same_order / n,
        "differ_only_by_ties": tie_only,
        "differ_otherwise": len(query_tokens) - same_order - tie_only,
        "bit_identical_score_vectors_pct": 100 * bit_identical / n,
        "max_abs_score_diff": max_abs,
        "max_rel_score_diff": max_rel,
        "queries_with_<10_hits": short,
    }


def sentence_pair_chunks(ids: list[str], texts: list[str], target: int) -> tuple[list[str], list[str]]:
    base_ids, base_texts = [], []
    for doc_id, text in zip(ids, texts):
        sentences = split_sentences(text)
        for i in range(0, len(sentences), 2):
            base_ids.append(f"{doc_id}:{i // 2}")
            base_texts.append(" ".join(sentences[i : i + 2]))
    out_ids, out_texts = list(base_ids[:target]), list(base_texts[:target])
    copy = 1
    while len(out_ids) < target:  # repeat with a suffix (a distinct token) until there are enough
        for doc_id, text in zip(base_ids, base_texts):
            if len(out_ids) >= target:
                break
            out_ids.append(f"{doc_id}~{copy}")
            out_texts.append(f"{text} copy{copy}")
        copy += 1
    return out_ids, out_texts


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--rb-sample", type=int, default=50, help="queries rank_bm25 is timed on at N chunks")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("rank_bm25 is not installed: pip install rank-bm25", file=sys.stderr)
        return 2

    corpus, queries, qrels = load_beir(args.data, "train")  # train only: test qrels stay unseen
    ids, texts = list(corpus), list(corpus.values())
    query_ids = list(queries)
    q_tokens = [tokenize(queries[q], drop_stopwords=True) for q in query_ids]  # what BM25Index.scores uses
    doc_tokens = [tokenize(t) for t in texts]

    # (a) SciFact: agreement and quality on identical tokens.
    ours = BM25Index().fit_tokens(ids, doc_tokens)
    rb = BM25Okapi(doc_tokens)
    agree = agreement(ours, rb, q_tokens)
    ndcg_ours = statistics.fmean(
        ndcg_at([d for d, _ in ours.search_tokens(t, 10)], qrels[q]) for q, t in zip(query_ids, q_tokens)
    )
    ndcg_rb = statistics.fmean(ndcg_at(rb.get_top_n(t, ids, n=10), qrels[q]) for q, t in zip(query_ids, q_tokens))

    # (b)/(c) N sentence-pair chunks.
    c_ids, c_texts = sentence_pair_chunks(ids, texts, args.chunks)
    start = time.perf_counter()
    c_tokens = [tokenize(t) for t in c_texts]
    t_tokenize = time.perf_counter() - start
    t_build_ours = _median_time(lambda: BM25Index().fit_tokens(c_ids, c_tokens), args.runs)
    big = BM25Index().fit_tokens(c_ids, c_tokens)
    t_build_rb = _median_time(lambda: BM25Okapi(c_tokens), args.runs)
    big_rb = BM25Okapi(c_tokens)

    step = max(1, len(q_tokens) // max(args.rb_sample, 1))
    sample = q_tokens[::step][: args.rb_sample]
    sample_text = [queries[q] for q in query_ids[::step][: args.rb_sample]]

    def run_ours(qs):
        for t in qs:
            big.search_tokens(t, 10)

    def run_ours_text(qs):
        for q in qs:
            big.search(q, 10)

    def run_rb(qs):
        for t in qs:
            big_rb.get_top_n(t, c_ids, n=10)

    run_ours(q_tokens)  # warm-up
    qps_ours_all = len(q_tokens) / _median_time(lambda: run_ours(q_tokens), args.runs)
    qps_ours_sample = len(sample) / _median_time(lambda: run_ours(sample), args.runs)
    qps_ours_text = len(sample_text) / _median_time(lambda: run_ours_text(sample_text), args.runs)
    qps_rb_sample = len(sample) / _median_time(lambda: run_rb(sample), args.runs)
    big_agree = agreement(big, big_rb, sample)

    n_chunks = len(c_ids)
    result = {
        "scifact": {
            "docs": len(ids),
            "train_queries": len(query_ids),
            **agree,
            "ndcg10_ours": ndcg_ours,
            "ndcg10_rank_bm25": ndcg_rb,
        },
        "throughput": {
            "chunks": n_chunks,
            "vocab": len(big.vocab),
            "avg_chunk_tokens": big.avgdl,
            "runs": args.runs,
            "sample_queries": len(sample),
            "qps_ours_sample": qps_ours_sample,
            "qps_rank_bm25_sample": qps_rb_sample,
            "speedup_same_sample": qps_ours_sample / qps_rb_sample,
            "qps_ours_all_train_queries": qps_ours_all,
            "all_train_queries": len(q_tokens),
            "qps_ours_from_query_text": qps_ours_text,
            "top10_same_set_pct_at_N": big_agree["same_top10_set_pct"],
            "top10_same_order_pct_at_N": big_agree["same_top10_order_pct"],
            "top10_differ_only_by_ties_at_N": big_agree["differ_only_by_ties"],
            "top10_differ_otherwise_at_N": big_agree["differ_otherwise"],
            "max_abs_score_diff_at_N": big_agree["max_abs_score_diff"],
        },
        "build": {
            "chunks": n_chunks,
            "tokenize_s": t_tokenize,
            "tokenize_chunks_per_s": n_chunks / t_tokenize,
            "ours_from_tokens_s": t_build_ours,
            "ours_chunks_per_s": n_chunks / t_build_ours,
            "rank_bm25_from_tokens_s": t_build_rb,
            "rank_bm25_chunks_per_s": n_chunks / t_build_rb,
            "ours_end_to_end_chunks_per_s": n_chunks / (t_tokenize + t_build_ours),
        },
    }
    a, t, b = result["scifact"], result["throughput"], result["build"]
    rows = [
        ("(a) SciFact docs / train queries", f"{a['docs']} / {a['train_queries']}", ""),
        (
            "    score vectors bit-identical",
            f"{a['bit_identical_score_vectors_pct']:.1f}% of queries",
            f"max |diff| {a['max_abs_score_diff']:.2e}",
        ),
        ("    top-10 identical set", f"{a['same_top10_set_pct']:.1f}%", ""),
        (
            "    top-10 identical order",
            f"{a['same_top10_order_pct']:.1f}%",
            f"ties-only diffs {a['differ_only_by_ties']}, other diffs {a['differ_otherwise']}",
        ),
        ("    nDCG@10 (train)", f"ours {a['ndcg10_ours']:.4f}", f"rank_bm25 {a['ndcg10_rank_bm25']:.4f}"),
        (
            f"(b) queries/s at {n_chunks} chunks, top-10",
            f"ours {t['qps_ours_sample']:.0f}",
            f"rank_bm25 {t['qps_rank_bm25_sample']:.2f}  (same {t['sample_queries']} queries, median of {args.runs})",
        ),
        ("    speed ratio (same sample)", f"{t['speedup_same_sample']:.0f}x", ""),
        (
            "    ours, all train queries",
            f"{t['qps_ours_all_train_queries']:.0f} q/s",
            f"{t['all_train_queries']} queries; from query text incl. tokenizing: {t['qps_ours_from_query_text']:.0f} q/s",
        ),
        (
            "    top-10 agreement at N (sample)",
            f"set {t['top10_same_set_pct_at_N']:.1f}%",
            (
                f"order {t['top10_same_order_pct_at_N']:.1f}% (ties-only diffs {t['top10_differ_only_by_ties_at_N']}, "
                f"other {t['top10_differ_otherwise_at_N']}), max |diff| {t['max_abs_score_diff_at_N']:.2e}"
            ),
        ),
        (
            f"(c) build at {n_chunks} chunks",
            f"ours {b['ours_from_tokens_s']:.2f}s ({b['ours_chunks_per_s']:.0f}/s)",
            f"rank_bm25 {b['rank_bm25_from_tokens_s']:.2f}s ({b['rank_bm25_chunks_per_s']:.0f}/s), from the same tokens",
        ),
        (
            "    tokenizing",
            f"{b['tokenize_s']:.2f}s ({b['tokenize_chunks_per_s']:.0f}/s)",
            f"ours end to end {b['ours_end_to_end_chunks_per_s']:.0f} chunks/s",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for label, left, right in rows:
        print(f"{label:<{width}}  {left:<22} {right}")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

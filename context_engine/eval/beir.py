"""BEIR-layout data sets and the ranking metrics every retrieval benchmark reports.

A BEIR folder holds `corpus.jsonl` (or `.jsonl.gz`), `queries.jsonl` and `qrels/<split>.tsv`.
Only the requested split's judgements are read, so a benchmark tuned on `train` never sees `test`.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Iterator
from pathlib import Path


def read_corpus(root: Path) -> Iterator[dict]:
    """The corpus documents (`_id`, `title`, `text`) of a BEIR folder, from `corpus.jsonl[.gz]`."""
    path = root / "corpus.jsonl.gz"
    opener = gzip.open if path.exists() else open
    path = path if path.exists() else root / "corpus.jsonl"
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load_beir(root: Path, split: str = "train") -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """(corpus id -> "title text", judged query id -> text, qrels of `split` with positive scores)."""
    corpus = {str(doc["_id"]): f"{doc.get('title', '')} {doc.get('text', '')}".strip() for doc in read_corpus(root)}
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    queries: dict[str, str] = {}
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    return corpus, queries, {qid: rel for qid, rel in qrels.items() if qid in queries}


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    """nDCG@k with linear gain, as pytrec_eval (and so BEIR) computes it."""
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int = 100) -> float:
    return len(set(ranked[:k]) & set(rel)) / len(rel) if rel else 0.0

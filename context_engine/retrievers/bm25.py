"""BM25 over jieba-segmented Chinese and lower-cased English tokens, as a sparse matrix.

Scoring a query is one sparse row slice and a sum: no Python loop over documents (the seeds'
`rank_bm25` scans every document per query term).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np
from scipy import sparse

_TOKEN = re.compile(r"[\u4e00-\u9fff]+|[a-z0-9]+(?:[._\-][a-z0-9]+)*")
_CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_STOPWORDS = frozenset("""
a an and are as at be but by for from has have in is it its of on or that the this to was were
will with we our you your they their i me my what which who why how when where did do does
""".split())


@lru_cache(maxsize=1)
def _jieba():
    import jieba  # lazy: the dictionary load costs about a second

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba


def _stem(token: str) -> str:
    """A light, consistent suffix strip so "caches"/"caching"/"cached" meet "cache"."""
    if len(token) <= 4 or not token.isalpha():
        return token
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + repl
    return token


def tokenize(text: str, drop_stopwords: bool = False) -> list[str]:
    tokens: list[str] = []
    for piece in _TOKEN.findall(text.lower()):
        if _CJK.match(piece):
            tokens.extend(t for t in _jieba().lcut(piece) if t.strip())
        elif not (drop_stopwords and piece in ENGLISH_STOPWORDS):
            tokens.append(_stem(piece))
    return tokens


class BM25Index:
    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}
        self.matrix: sparse.csc_matrix | None = None
        self.ids: list[str] = []

    def fit(self, ids: Sequence[str], texts: Iterable[str]) -> "BM25Index":
        return self.fit_tokens(ids, (tokenize(t) for t in texts))

    def fit_tokens(self, ids: Sequence[str], token_lists: Iterable[list[str]]) -> "BM25Index":
        rows, cols, counts, lengths = [], [], [], []
        for row, tokens in enumerate(token_lists):
            lengths.append(len(tokens))
            tf: dict[int, int] = {}
            for tok in tokens:
                col = self.vocab.setdefault(tok, len(self.vocab))
                tf[col] = tf.get(col, 0) + 1
            rows.extend([row] * len(tf))
            cols.extend(tf)
            counts.extend(tf.values())
        self.ids = list(ids)
        n = len(self.ids)
        tf_matrix = sparse.csr_matrix((np.array(counts, dtype=np.float32), (rows, cols)), shape=(n, len(self.vocab)))
        doc_len = np.array(lengths, dtype=np.float32)
        avg = float(doc_len.mean()) if n else 0.0
        df = np.bincount(np.array(cols, dtype=np.int64), minlength=len(self.vocab)).astype(np.float32)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        # Precompute each (doc, term) weight once; a query is then a column slice and a row sum.
        tf_matrix = tf_matrix.tocoo()
        norm = self.k1 * (1 - self.b + self.b * doc_len[tf_matrix.row] / max(avg, 1e-9))
        weights = idf[tf_matrix.col] * tf_matrix.data * (self.k1 + 1) / (tf_matrix.data + norm)
        self.matrix = sparse.csc_matrix((weights, (tf_matrix.row, tf_matrix.col)), shape=tf_matrix.shape)
        return self

    def scores(self, query: str) -> np.ndarray:
        terms = [self.vocab[t] for t in dict.fromkeys(tokenize(query, drop_stopwords=True)) if t in self.vocab]
        if self.matrix is None or not terms:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self.matrix[:, terms].sum(axis=1)).ravel()

    def search(self, query: str, k: int | None = None) -> list[tuple[str, float]]:
        """Documents that contain a query term, best first (all of them when k is None)."""
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        order = hits[np.argsort(-scores[hits], kind="stable")]
        if k is not None:
            order = order[:k]
        return [(self.ids[i], float(scores[i])) for i in order]

"""BM25 over jieba-segmented Chinese and lower-cased English tokens, as a sparse matrix.

Scoring a query is a few column slices of a CSC matrix and one `np.bincount`: no Python loop over
documents (the seeds' `rank_bm25` scans every document per query term).

The default scoring is exactly `rank_bm25.BM25Okapi` (k1=1.5, b=0.75, epsilon=0.25):

    idf(t)   = log(N - n_t + 0.5) - log(n_t + 0.5), and a negative idf is replaced by
               epsilon * (mean idf over the whole vocabulary)
    w(d, t)  = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(d) = sum of w(d, t) over the query tokens, a repeated query token counting again

The arithmetic is done in float64 in the same order as rank_bm25, so on the same tokens the
scores agree to the last bit or within float noise. `idf="lucene"` selects log(1 + (N - n + 0.5) /
(n + 0.5)) instead, which is never negative (better behaved on tiny corpora).
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from context_engine.store.regular_files import open_regular
from context_engine.text import TOKENIZATION, tokenize


def _csc_matrix(*args: Any, **kwargs: Any) -> Any:
    from scipy import sparse  # lazy: ~0.15 s of import that a loaded index never needs

    return sparse.csc_matrix(*args, **kwargs)


class _CscArrays(NamedTuple):
    """A loaded index's matrix: the CSC arrays that scoring reads (`_postings`), without scipy."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]


class BM25Index:
    """`fit` (or `fit_tokens`) once, then `scores`/`search` per query. Ids are kept in fit order."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, idf: str = "okapi"):
        if idf not in ("okapi", "lucene"):
            raise ValueError(f"idf must be 'okapi' or 'lucene', not {idf!r}")
        self.k1, self.b, self.epsilon, self.idf_kind = k1, b, epsilon, idf
        self.vocab: dict[str, int] = {}
        # docs x terms, each entry the BM25 weight w(d, t): a scipy.sparse.csc_matrix once fit, its
        # arrays once loaded
        self.matrix: Any = None
        self.ids: list[str] = []
        self.idf: np.ndarray = np.zeros(0)
        self.avgdl = 0.0
        self.tokenization = TOKENIZATION  # how the indexed texts were tokenized (see `load`)

    def __len__(self) -> int:
        return len(self.ids)

    # ----------------------------------------------------------------------------------- files
    def save(self, path: Path) -> None:
        """The weight matrix (CSC arrays), idf, vocabulary, parameters and tokenization as one .npz:
        numbers, never pickles, so loading an index is reading data. Written and fsynced; callers
        rename it into place."""
        matrix = self.matrix
        # The vocabulary as one newline-joined UTF-8 buffer (tokens never contain a newline): a numpy
        # string array would pad every term to the longest one.
        vocab = "\n".join(sorted(self.vocab, key=self.vocab.__getitem__)).encode("utf-8")
        with open(path, "wb") as fh:
            np.savez(
                fh,
                data=matrix.data,
                indices=matrix.indices,
                indptr=matrix.indptr,
                shape=np.array(matrix.shape, dtype=np.int64),
                idf=self.idf,
                vocab=np.frombuffer(vocab, dtype=np.uint8),
                params=np.array([self.k1, self.b, self.avgdl]),
                tokenization=np.frombuffer(self.tokenization.encode("utf-8"), dtype=np.uint8),
            )
            fh.flush()
            os.fsync(fh.fileno())

    @classmethod
    def load(cls, path: Path, ids: list[str]) -> BM25Index:
        """An index `save` wrote; `ids` are the documents in fit order (kept beside it by the caller).
        Its `tokenization` says how its texts were tokenized ("light-stem" for files written before the
        tag existed): when it is not `text.TOKENIZATION`, query tokens would miss its vocabulary, and
        the caller refits it from the texts."""
        with open_regular(path, "rb") as fh, np.load(fh, allow_pickle=False) as arrays:
            k1, b, avgdl = arrays["params"].tolist()
            bm25 = cls(k1=k1, b=b, idf="lucene")
            bm25.matrix = _CscArrays(
                arrays["data"], arrays["indices"], arrays["indptr"], tuple(arrays["shape"].tolist())
            )
            terms = arrays["vocab"].tobytes().decode("utf-8")
            bm25.vocab = {term: i for i, term in enumerate(terms.split("\n"))} if terms else {}
            bm25.idf = arrays["idf"]
            bm25.tokenization = (
                arrays["tokenization"].tobytes().decode("utf-8") if "tokenization" in arrays.files else "light-stem"
            )
        bm25.ids, bm25.avgdl = ids, avgdl
        return bm25

    # ----------------------------------------------------------------------------------- build
    def fit(self, ids: Sequence[str], texts: Iterable[str]) -> BM25Index:
        return self.fit_tokens(ids, (tokenize(t) for t in texts))

    def fit_tokens(self, ids: Sequence[str], token_lists: Iterable[list[str]]) -> BM25Index:
        vocab: dict[str, int] = {}
        setdefault = vocab.setdefault
        flat = array("i")  # every token's term id: 4 bytes each, not a list's 8 (27M tokens at 444k chunks)
        lengths: list[int] = []
        for tokens in token_lists:
            lengths.append(len(tokens))
            flat.extend([setdefault(tok, len(vocab)) for tok in tokens])
        self.ids = list(ids)
        n = len(self.ids)
        if n != len(lengths):
            raise ValueError(f"{n} ids for {len(lengths)} documents")
        self.vocab = vocab
        n_terms = len(vocab)
        doc_len = np.asarray(lengths, dtype=np.float64)
        cols = np.frombuffer(flat, dtype=np.int32) if flat else np.zeros(0, dtype=np.int32)  # not copied
        rows = np.repeat(np.arange(n, dtype=np.int32), np.asarray(lengths, dtype=np.int64))
        # Duplicate (doc, term) pairs are summed on conversion: the data become term frequencies. The
        # ones are float32 (counts stay exact up to 2**24 a term per document, far past any chunk) to
        # halve the largest array of the fit's peak, ~1 GB at 444k chunks with float64.
        tf = _csc_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)), shape=(n, n_terms))
        del flat, cols, rows
        tf.sum_duplicates()
        df = np.diff(tf.indptr)  # each (doc, term) entry is one document containing the term
        self.avgdl = sum(lengths) / n if n else 0.0
        self.idf = self._idf(n, df)
        term_of_entry = np.repeat(np.arange(n_terms, dtype=np.int64), df)
        freq = tf.data.astype(np.float64)
        # The same operations in the same order as rank_bm25's get_scores, so the floats agree.
        norm = freq + self.k1 * (1 - self.b + self.b * doc_len[tf.indices] / (self.avgdl or 1.0))
        tf.data = self.idf[term_of_entry] * (freq * (self.k1 + 1) / norm)
        self.matrix = tf
        return self

    def _idf(self, n: int, df: np.ndarray) -> np.ndarray:
        if len(df) == 0:
            return np.zeros(0, dtype=np.float64)
        if self.idf_kind == "lucene":
            return np.log1p((n - df + 0.5) / (df + 0.5))
        log = math.log
        # Python floats and a sequential sum in first-seen term order, exactly as BM25Okapi does.
        values = [log(n - f + 0.5) - log(f + 0.5) for f in df.tolist()]
        eps = self.epsilon * (sum(values) / len(values))
        return np.array([eps if v < 0 else v for v in values], dtype=np.float64)

    # ----------------------------------------------------------------------------------- query
    def query_tokens(self, query: str) -> list[str]:
        """How `scores`/`search` tokenize a query string (stopwords dropped)."""
        return tokenize(query, drop_stopwords=True)

    def _postings(self, tokens: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(doc rows, weights) of every query token's column, in query order, duplicates kept."""
        if self.matrix is None:
            return np.zeros(0, dtype=np.int32), np.zeros(0)
        indptr, indices, data = self.matrix.indptr, self.matrix.indices, self.matrix.data
        cols = [self.vocab[t] for t in tokens if t in self.vocab]
        if not cols:
            return np.zeros(0, dtype=np.int32), np.zeros(0)
        if len(cols) == 1:
            lo, hi = indptr[cols[0]], indptr[cols[0] + 1]
            return indices[lo:hi], data[lo:hi]
        rows = np.concatenate([indices[indptr[c] : indptr[c + 1]] for c in cols])
        weights = np.concatenate([data[indptr[c] : indptr[c + 1]] for c in cols])
        return rows, weights

    def scores_tokens(self, tokens: Sequence[str]) -> np.ndarray:
        """A float64 score per document (fit order) for an already tokenized query."""
        rows, weights = self._postings(tokens)
        # bincount adds the weights in array order, i.e. term by term as rank_bm25 does.
        return np.bincount(rows, weights=weights, minlength=len(self.ids)).astype(np.float64, copy=False)

    def scores(self, query: str) -> np.ndarray:
        return self.scores_tokens(self.query_tokens(query))

    def search_tokens(self, tokens: Sequence[str], k: int | None = None) -> list[tuple[str, float]]:
        rows, weights = self._postings(tokens)
        if len(rows) == 0:
            return []
        scores = np.bincount(rows, weights=weights, minlength=len(self.ids))
        hits = np.flatnonzero(np.bincount(rows, minlength=len(self.ids)))  # contain a query term
        hit_scores = scores[hits]
        if k is not None and k < len(hits):
            if k <= 0:
                return []
            # Keep every document tied with the k-th score, then break ties by fit order.
            kth = np.partition(hit_scores, len(hits) - k)[len(hits) - k]
            keep = hit_scores >= kth
            hits, hit_scores = hits[keep], hit_scores[keep]
        order = np.lexsort((hits, -hit_scores))
        if k is not None:
            order = order[:k]
        return [(self.ids[i], float(scores[i])) for i in hits[order]]

    def search(self, query: str, k: int | None = None) -> list[tuple[str, float]]:
        """Documents that contain a query term, best first, ties in fit order (all of them when k is None)."""
        return self.search_tokens(self.query_tokens(query), k)

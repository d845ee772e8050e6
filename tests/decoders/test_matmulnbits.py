"""com.microsoft MatMulNBits -> ncnn Gemm with block-quantized B where ncnn computes the same (4-bit;
zero points other than 8 as 6-bit; blocks of 256 as 128), float weights with a warning elsewhere;
numbers against onnxruntime, in the real ncnn runtime and the interpreter."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import converter
from converter.ncnn_side.layout import to_ncnn, to_onnx
from converter.ncnn_side.runtime import run_ncnn


def _model(k: int, n: int, bits: int, block: int, zero_points: bool, bias: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    blocks = -(-k // block)
    q = rng.integers(0, 1 << bits, (n, blocks * block)).astype(np.uint8)
    per = 8 // bits
    packed = np.zeros((n, blocks * block // per), np.uint8)
    for i in range(per):
        packed |= (q[:, i::per] << (bits * i)).astype(np.uint8)
    inits = [helper.make_tensor("B", TensorProto.UINT8, [n, blocks, block * bits // 8], packed.tobytes(), raw=True),
             helper.make_tensor("scales", TensorProto.FLOAT, [n * blocks],
                                rng.uniform(0.01, 0.1, n * blocks).astype(np.float32))]
    inputs = ["A", "B", "scales"]
    if zero_points:
        zp = rng.integers(0, 1 << bits, (n, blocks)).astype(np.uint8)
        width = -(-blocks * bits // 8)
        zpp = np.zeros((n, width), np.uint8)
        for b in range(blocks):
            zpp[:, b // per] |= (zp[:, b] << (bits * (b % per))).astype(np.uint8)
        inits.append(helper.make_tensor("zp", TensorProto.UINT8, [n * width], zpp.tobytes(), raw=True))
        inputs.append("zp")
    if bias:
        inputs += [""] * (5 - len(inputs)) + ["bias"]
        inits.append(helper.make_tensor("bias", TensorProto.FLOAT, [n], rng.standard_normal(n).astype(np.float32)))
    node = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block)
    graph = helper.make_graph([node], "mmnb", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, "S", k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "S", n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


CASES = {   # name: (K, N, bits, block, zero points, bias, expected 18= or None for float)
    "int4_b32": (96, 40, 4, 32, False, False, 400),
    "int4_b64_bias": (128, 24, 4, 64, False, True, 401),
    "int4_b128_partial": (200, 16, 4, 128, False, False, 402),
    "int4_b256_as_128": (256, 16, 4, 256, False, False, 402),
    "int4_zero_points_as_6bit": (96, 40, 4, 32, True, False, 600),
    "int4_b16_float": (64, 24, 4, 16, False, False, None),
    "int8_float": (64, 24, 8, 32, False, False, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matmulnbits(case, tmp_path):
    k, n, bits, block, zp, bias, term = CASES[case]
    proto = _model(k, n, bits, block, zp, bias)
    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    a = np.random.default_rng(1).standard_normal((1, 3, k)).astype(np.float32)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    model = converter.convert(str(path))
    gemms = [nd for nd in model.graph.topological() if nd.op == "Gemm"]
    warned = [w for w in model.graph.warnings if "dequantized to float32" in w]
    if term is None:
        assert warned and all(nd.params.get(18, 0) == 0 for nd in gemms)
    else:
        assert not warned and [nd.params[18] for nd in gemms] == [term]
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(model.run({"A": a})["Y"], ref, rtol=1e-5, atol=1e-5 * scale)
    model.save(tmp_path / "m.param", tmp_path / "m.bin")
    io = model.io()
    entry_in, entry_out = io["inputs"][0], io["outputs"][0]
    real = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {entry_in["ncnn"]: to_ncnn(a, entry_in)},
                    [entry_out["ncnn"]], threads=1)[entry_out["ncnn"]]
    np.testing.assert_allclose(to_onnx(real, entry_out), ref, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("zero_points", [False, True])
def test_gather_block_quantized(zero_points, tmp_path):
    """The builder's int4 embedding: dequantized rows gathered by an Embed, as onnxruntime gathers."""
    rng = np.random.default_rng(int(zero_points))
    vocab, k, block = 40, 64, 32
    data = rng.integers(0, 256, (vocab, k // 2)).astype(np.uint8)
    inits = [helper.make_tensor("data", TensorProto.UINT8, data.shape, data.tobytes(), raw=True),
             helper.make_tensor("scales", TensorProto.FLOAT, [vocab, k // block],
                                rng.uniform(0.01, 0.1, vocab * k // block).astype(np.float32))]
    inputs = ["data", "ids", "scales"]
    if zero_points:
        zp = rng.integers(0, 256, (vocab, k // block // 2)).astype(np.uint8)
        inits.append(helper.make_tensor("zp", TensorProto.UINT8, zp.shape, zp.tobytes(), raw=True))
        inputs.append("zp")
    node = helper.make_node("GatherBlockQuantized", inputs, ["Y"], domain="com.microsoft", bits=4,
                            block_size=block, gather_axis=0, quantize_axis=1)
    graph = helper.make_graph([node], "gbq", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "S"])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "S", k])], inits)
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                      helper.make_opsetid("com.microsoft", 1)]), path)
    ids = np.array([[3, 0, 39, 7]], np.int64)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"ids": ids})[0]
    model = converter.convert(str(path))
    assert [n.op for n in model.graph.topological()].count("Embed") == 1
    np.testing.assert_allclose(model.run({"ids": ids})["Y"], ref, rtol=1e-6, atol=1e-7)

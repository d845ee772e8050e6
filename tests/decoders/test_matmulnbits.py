"""com.microsoft MatMulNBits -> ncnn Gemm with block-quantized B where ncnn computes the same (4-bit;
zero points other than 8 as 6-bit; blocks of 256 as 128), float weights with a warning elsewhere;
numbers against onnxruntime, in the real ncnn runtime and the interpreter."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import converter
from converter.ncnn_side.layout import to_ncnn, to_onnx
from converter.ncnn_side.runtime import run_ncnn


def _model(k: int, n: int, bits: int, block: int, zero_points: bool, bias: bool, seed: int = 0,
           weight: list | None = None):
    """The model; `weight` (a list) receives the float weight (N, K) MatMulNBits' spec gives."""
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
    scales = numpy_helper.to_array(inits[1]).reshape(n, blocks)
    zp = np.full((n, blocks), 1 << (bits - 1))
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
    if weight is not None:
        weight.append(((q[:, :k] - zp.astype(np.float64).repeat(block, axis=1)[:, :k])
                       * scales.astype(np.float64).repeat(block, axis=1)[:, :k]))
    node = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block)
    graph = helper.make_graph([node], "mmnb", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, "S", k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "S", n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


CASES = {   # name: (K, N, bits, block, zero points, bias, expected 18= with --block-quant keep, None: float)
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
    model = converter.convert(str(path), block_quant="keep")
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


def _real_ncnn(model, tmp_path, a):
    model.save(tmp_path / "m.param", tmp_path / "m.bin")
    entry_in, entry_out = model.io()["inputs"][0], model.io()["outputs"][0]
    real = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {entry_in["ncnn"]: to_ncnn(a, entry_in)},
                    [entry_out["ncnn"]], threads=1)[entry_out["ncnn"]]
    return to_onnx(real, entry_out)


@pytest.mark.parametrize("case", ["int4_b32", "int4_b64_bias", "int4_zero_points_as_6bit", "int8_float"])
def test_matmulnbits_int8(case, tmp_path):
    """--block-quant int8 (the default): an int8 Gemm (18=2) then the channel scales (a BinaryOp); the
    interpreter as the real runtime computes it; onnxruntime's numbers within the bound the two
    roundings allow: each weight moves by at most its row's max / 254, each input value by its row's."""
    k, n, bits, block, zp, bias, _ = CASES[case]
    weight = []
    path = tmp_path / "m.onnx"
    onnx.save(_model(k, n, bits, block, zp, bias, weight=weight), path)
    a = np.random.default_rng(1).standard_normal((1, 3, k)).astype(np.float32)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    model = converter.convert(str(path))
    ops = [nd.op for nd in model.graph.topological() if nd.op not in ("Input", "MemoryData")]
    assert ops == ["Gemm", "BinaryOp"]
    assert [nd.params.get(18) for nd in model.graph.topological() if nd.op == "Gemm"] == [2]
    assert any("--block-quant int8" in note for note in model.stats["notes"])
    ours, real = model.run({"A": a})["Y"], _real_ncnn(model, tmp_path, a)
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(ours, real, rtol=1e-5, atol=1e-6 * scale)
    w, x = weight[0], a[0].astype(np.float64)
    dw = np.abs(w).max(axis=1) / 254                         # per output channel
    dx = np.abs(x).max(axis=1, keepdims=True) / 254          # per row
    bound = np.abs(x) @ np.broadcast_to(dw[:, None], w.shape).T + dx * (np.abs(w).sum(axis=1) + k * dw)
    assert np.all(np.abs(real[0] - ref[0]) <= bound * 1.0001 + 1e-6 * scale)
    assert np.abs(real - ref).max() > 1e-6 * scale           # int8 arithmetic, not the float one


def test_matmulnbits_dequantize(tmp_path):
    """--block-quant dequantize: a float Gemm computing onnxruntime's numbers, zero points and bias included."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(96, 40, 4, 32, True, True), path)
    a = np.random.default_rng(1).standard_normal((1, 3, 96)).astype(np.float32)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    model = converter.convert(str(path), block_quant="dequantize")
    assert [nd.params.get(18, 0) for nd in model.graph.topological() if nd.op == "Gemm"] == [0]
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(_real_ncnn(model, tmp_path, a), ref, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(model.run({"A": a})["Y"], ref, rtol=1e-5, atol=1e-5 * scale)


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


def test_block_quant_option_cli(tmp_path, capsys):
    """convert --block-quant: each choice prints one note saying what it trades; a wrong one is one line."""
    from converter.cli import main
    path = tmp_path / "m.onnx"
    onnx.save(_model(96, 40, 4, 32, False, False), path)
    terms = {}
    for choice in ("int8", "dequantize", "keep"):
        assert main(["convert", str(path), "-o", str(tmp_path / choice), "--block-quant", choice, "-q"]) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("onnx2ncnn: note:")]
        assert len(notes) == 1 and f"--block-quant {choice}" in notes[0]
        terms[choice] = [line.split()[-1] for line in (tmp_path / choice / "m.ncnn.param").read_text().splitlines()
                         if line.startswith("Gemm")]
    assert terms == {"int8": ["18=2"], "dequantize": [terms["dequantize"][0]], "keep": ["18=400"]}
    assert "18=" not in terms["dequantize"][0]
    assert main(["convert", str(path), "--block-quant", "int4"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_matmulnbits_unknown_k(tmp_path):
    """An input whose last extent shape inference left unknown (onnxruntime's quantizer on a torch.onnx
    export: o_proj reads a Reshape to (B, T, -1)) reads rows of K, as onnxruntime requires: it converts
    (it was refused: "does not end in K") and computes onnxruntime's numbers in the real runtime."""
    proto = _model(96, 40, 4, 32, False, True)
    proto.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "D"
    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    a = np.random.default_rng(1).standard_normal((1, 3, 96)).astype(np.float32)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    model = converter.convert(str(path), block_quant="keep")
    assert [nd.params.get(18) for nd in model.graph.topological() if nd.op == "Gemm"] == [400]
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(_real_ncnn(model, tmp_path, a), ref, rtol=1e-4, atol=1e-5 * scale)

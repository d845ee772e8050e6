"""Q/DQ placements and types onnxruntime loads that its quantizer's default output does not use
(scripts/quantize_sweep.py found them): each converts and matches onnxruntime's plain run (graph
optimizations off: its fused kernels refuse some of these) in the real ncnn and the interpreter, or is
refused in one line. The values are floats through exact float emulation: 1e-6 covers float rounding,
while a misread scale or block moves values by whole steps (0.01 and more)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from converter.ncnn_side.runtime import run_ncnn

RNG = np.random.default_rng(0)
X_SHAPE = [1, 4, 32]


def _model(nodes, inits, opset, domain_opsets=()):
    graph = helper.make_graph(nodes, "placement", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) if not isinstance(v, onnx.TensorProto) else v
                               for k, v in inits.items()])
    opsets = [helper.make_opsetid("", opset), *[helper.make_opsetid(d, 1) for d in domain_opsets]]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _pair(x, out, domain=""):
    return [helper.make_node("QuantizeLinear", [x, "xs", "xz"], [out + "_q"], domain=domain),
            helper.make_node("DequantizeLinear", [out + "_q", "xs", "xz"], [out], domain=domain)]


ACTIVATION = {"xs": np.float32(0.02), "xz": np.int8(0)}
W = RNG.integers(-127, 128, (32, 8)).astype(np.int8)
W4 = RNG.integers(-8, 8, (32, 8)).astype(np.int8)


def blocked():
    """opset 21 block_size: the weight's scales per 16 rows, and an activation pair with a scale per block."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "bs", "bz"], ["xq"], axis=2, block_size=16),
             helper.make_node("DequantizeLinear", ["xq", "bs", "bz"], ["xd"], axis=2, block_size=16),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], axis=0, block_size=16),
             helper.make_node("MatMul", ["xd", "w"], ["y"])]
    return _model(nodes, {"bs": RNG.uniform(0.01, 0.03, (1, 4, 2)).astype(np.float32),
                          "bz": np.zeros((1, 4, 2), np.int8), "wq": W,
                          "ws": RNG.uniform(0.01, 0.02, (2, 8)).astype(np.float32)}, 21)


def contrib():
    """com.microsoft Q/DQ below opset 21 (UseQDQContribOps; 4-bit weights): int8 pair, int4 weight."""
    nodes = _pair("x", "xd", "com.microsoft") + [
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], axis=1, domain="com.microsoft"),
        helper.make_node("MatMul", ["xd", "w"], ["y"])]
    return _model(nodes, {**ACTIVATION, "wq": helper.make_tensor("wq", TensorProto.INT4, W4.shape, W4.ravel().tolist()),
                          "ws": RNG.uniform(0.01, 0.02, 8).astype(np.float32)}, 17, ["com.microsoft"])


def transposed_weight():
    """A dequantized weight transposed before the MatMul, weight scales along axis 0."""
    nodes = _pair("x", "xd") + [helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], axis=0),
                                helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
                                helper.make_node("MatMul", ["xd", "wt"], ["y"])]
    return _model(nodes, {**ACTIVATION, "wq": W.T.copy(), "ws": RNG.uniform(0.01, 0.02, 8).astype(np.float32)}, 13)


@pytest.mark.parametrize("build", [blocked, contrib, transposed_weight])
def test_placement_matches_onnxruntime(tmp_path, build):
    model = build()
    x = RNG.normal(0, 0.5, X_SHAPE).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0][0]
    converted = convert(model)
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    for got in (run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": x[0]}, ["y"])["y"],
                converted.run({"x": x[0]}, layout="ncnn")["y"]):
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)


def test_float8_is_refused_in_one_line():
    f8 = helper.make_tensor("xz", TensorProto.FLOAT8E4M3FN, [], [0])
    model = _model(_pair("x", "y"), {"xs": np.float32(0.05), "xz": f8}, 19)
    with pytest.raises(ConversionError) as info:
        convert(model)
    assert "float8" in str(info.value) and "\n" not in str(info.value).strip()

"""Hand-built QDQ graphs: what ncnn's int8 cannot take falls back to float with its reason, the
float emulation of Q/DQ matches onnxruntime exactly, and dynamic quantization (DynamicQuantizeLinear,
MatMulInteger, ConvInteger) runs in float, reported as approximate."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from quantized_cases import dynamic_model, qlinear_model
from converter.ir import ConversionError
from converter.ncnn_side.runtime import run_ncnn


def qdq_conv(weight_q: np.ndarray, weight_scale, x_zero=np.int8(0), axis: int = 0) -> onnx.ModelProto:
    """x -> Q/DQ (scale 0.05, given zero point) -> Conv(weight DQ(weight_q)) -> y."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(x_zero), "xz"),
             numpy_helper.from_array(weight_q.astype(np.int8), "wq"),
             numpy_helper.from_array(np.asarray(weight_scale, np.float32), "ws"),
             numpy_helper.from_array(np.zeros(np.shape(weight_scale), np.int8), "wz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=axis),
             helper.make_node("Conv", ["xd", "w"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def run_both(model: onnx.ModelProto, tmp_path, x: np.ndarray):
    converted = convert(model)
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options).run(None, {"x": x})[0][0]
    real = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": x[0]}, ["y"])["y"]
    return converted, want, real, converted.run({"x": x[0]}, layout="ncnn")["y"]


WEIGHT = np.random.default_rng(0).integers(-127, 128, (4, 3, 3, 3))
# values on and around .5-step boundaries, beyond the int8 range, and ordinary ones
X = (np.random.default_rng(1).normal(0, 3, (1, 3, 6, 6)).astype(np.float32) // 0.025 * 0.025).astype(np.float32)


@pytest.mark.parametrize("case, weight, x_zero, reason", [
    ("weight_minus_128", np.where(np.arange(WEIGHT.size).reshape(WEIGHT.shape) == 7, -128, WEIGHT), np.int8(0),
     "-128"),
    ("uint8_input", WEIGHT, np.uint8(128), "zero point 128"),
    ("int8_input_zero_point", WEIGHT, np.int8(3), "zero point 3"),
])
def test_fallback_is_exact_float(tmp_path, case, weight, x_zero, reason):
    converted, want, real, ours = run_both(qdq_conv(weight, np.full(4, 0.01), x_zero), tmp_path, X)
    assert converted.stats["int8_layers"] == 0
    conv = next(name for name in converted.stats["int8_fallbacks"] if name.startswith("Conv"))
    assert reason in converted.stats["int8_fallbacks"][conv]
    # Q/DQ emulated exactly; only the float convolution's summation order differs
    np.testing.assert_allclose(real, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [np.full(4, 0.01), np.array(0.02), np.array([0.01, 0.02, 0.0, 0.03])])
def test_int8_conv_per_channel_per_tensor_and_zero_scale(tmp_path, scale):
    converted, want, real, ours = run_both(qdq_conv(WEIGHT, scale), tmp_path, X)
    assert converted.stats["int8_layers"] == 1
    # ncnn's x * (1/s) may round an input a step away from onnxruntime's x / s at a .5 boundary:
    # one input step (0.05) times the largest weight row's L1 norm bounds each output's change
    bound = 0.05 * np.abs(WEIGHT * np.reshape(scale, (-1, 1, 1, 1))).reshape(4, -1).sum(1).max()
    assert np.abs(real - want).max() <= bound and np.abs(ours - want).max() <= bound


def test_dynamic_quantization_runs_in_float(tmp_path):
    """Measured equal to onnxruntime but for float rounding: the activations quantize to the same
    steps (the run-time scale's division can only move a value an ulp from a .5 step) and the
    integer sums are exact in float32. Allowed: 1e-5 of the largest output."""
    model = dynamic_model()
    converted = convert(model)
    reasons = converted.stats["int8_fallbacks"]
    assert len(reasons) == 4 and all("dynamic quantization emulated in float32" in why for why in reasons.values())
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    rng = np.random.default_rng(9)
    feeds = {"x": rng.normal(0, 1, (1, 6, 8)).astype(np.float32),
             "img": rng.normal(0.5, 1, (1, 3, 5, 5)).astype(np.float32)}
    want = dict(zip(["y1", "y2"], ort.InferenceSession(model.SerializeToString()).run(None, feeds)))
    ncnn_feeds = {"x": feeds["x"][0], "img": feeds["img"][0]}
    for got in (run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", ncnn_feeds, ["y1", "y2"]),
                converted.run(ncnn_feeds, layout="ncnn")):
        for name, ref in want.items():
            np.testing.assert_allclose(got[name].reshape(ref.shape), ref, atol=1e-5 * np.abs(ref).max(), err_msg=name)


def test_qlinear_ops_run_int8(tmp_path):
    """onnxruntime requantizes QLinear sums in its own rounding, so an output may be a step off."""
    model = qlinear_model()
    converted = convert(model)
    assert converted.stats["qlinear_expanded"] == 3 and converted.stats["int8_layers"] >= 2
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    # ordinary inputs (X above is built to hit .5 boundaries and the int8 limits everywhere,
    # where flips add up over three layers): measured equal; allowed one output step (0.3)
    x = np.random.default_rng(4).normal(0, 1.5, (1, 3, 6, 6)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0].ravel()
    for got in (run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": x[0]}, ["y"])["y"],
                converted.run({"x": x[0]}, layout="ncnn")["y"]):
        assert np.abs(got.ravel() - want).max() <= 0.3 + 1e-6


@pytest.mark.parametrize("zero", [np.uint16(30000), np.int16(-7)], ids=["uint16", "int16"])
def test_16bit_quantize_divides_exactly(tmp_path, zero):
    """A 16-bit pair with a scale whose reciprocal is inexact: values within an ulp of .5 steps, where
    x * (1 / s) rounds across the step now and then (checked below), land where onnxruntime's x / s puts
    them, in the real ncnn and the interpreter, bit for bit."""
    scale = np.float32(0.000123)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "q16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 32, 32])],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    steps = np.random.default_rng(2).integers(-30000, 30000, (1, 4, 32, 32)) + 0.5
    ulps = np.random.default_rng(3).integers(-3, 4, steps.shape)
    x = (steps * scale).astype(np.float32)
    x = np.nextafter(x, np.where(ulps > 0, np.inf, -np.inf)).astype(np.float32) * (ulps != 0) + x * (ulps == 0)
    x = x.astype(np.float32)
    naive = np.rint(x * (np.float32(1) / scale))
    assert np.count_nonzero(naive != np.rint(x / scale)) > 10      # the multiply would be off here
    converted, want, real, interpreted = run_both(model, tmp_path, x)
    np.testing.assert_array_equal(real, want)
    np.testing.assert_array_equal(interpreted, want)

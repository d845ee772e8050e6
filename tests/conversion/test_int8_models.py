"""Quantized (QDQ) models from onnxruntime's quantize_static: int8 layers where ncnn can, float
emulation elsewhere; real ncnn and the interpreter against onnxruntime on the quantized model.

Tolerance: ncnn quantizes a layer input as round(x * (1/s)) (ties away from zero, clamp -127)
where onnxruntime computes round_half_even(x / s) (clamp -128). The two differ only for values
within an ulp of a .5 boundary or below -127.5 steps, and each such value moves by one step of
its tensor. The models' outputs are themselves quantized, so a disagreement shows as whole
output steps: we allow one step, on at most a tenth of the outputs (measured: none differ).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from converter.api import convert
from converter.ncnn_side.runtime import run_ncnn

SHAPE = (1, 8, 12, 12)


def _float_model(path, rng) -> None:
    def init(name, shape):
        return numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16, strides=[2, 2]),
             helper.make_node("Add", ["c2", "c2"], ["a2"]),
             helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1)]
    inits = [init("w1", (16, 8, 3, 3)), init("b1", (16,)), init("w2", (16, 1, 3, 3)), init("b2", (16,)),
             init("w3", (10, 16)), init("b3", (10,))]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


class _Feeds(CalibrationDataReader):
    def __init__(self, rng):
        self.feeds = iter([{"x": rng.normal(0, 1, SHAPE).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.feeds, None)


def _quantized(tmp_path_factory, symmetric: bool) -> str:
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("int8")
    _float_model(str(folder / "float.onnx"), rng)
    quantize_static(str(folder / "float.onnx"), str(folder / "q.onnx"), _Feeds(rng), quant_format=QuantFormat.QDQ,
                    per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
                    extra_options={"ActivationSymmetric": symmetric, "WeightSymmetric": True})
    return str(folder / "q.onnx")


@pytest.fixture(scope="module", params=[True, False], ids=["symmetric_int8", "uint8_zero_point"])
def quantized(request, tmp_path_factory):
    path = _quantized(tmp_path_factory, request.param)
    model = convert(path)
    param, bin_ = path.replace(".onnx", ".param"), path.replace(".onnx", ".bin")
    model.save(param, bin_)
    x = np.random.default_rng(3).normal(0, 1, SHAPE).astype(np.float32)
    # the QDQ graph as the ONNX spec defines it: onnxruntime's optimizer would fuse DQ-Conv-Q
    # into QLinearConv, whose integer requantization rounds differently again
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(path, options).run(None, {"x": x})[0].ravel()
    out_scale = next(numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer if t.name == "y_scale")
    return request.param, model, want, float(out_scale), {
        "ncnn": run_ncnn(param, bin_, {"x": x[0]}, ["y"])["y"].ravel(),
        "interpreter": next(iter(model.run({"x": x[0]}, layout="ncnn").values())).ravel()}


def test_int8_layers_and_fallbacks_are_reported(quantized):
    symmetric, model, *_ = quantized
    if symmetric:
        assert model.stats["int8_layers"] == 3          # Conv, depthwise Conv, Gemm
        reasons = model.stats["int8_fallbacks"]
        # c1's pair: its Relu is hoisted into the Conv and the int8 Conv after it reads the Relu's
        # output itself, so no layer quantizes there; every pair reported runs as float layers
        assert set(reasons) == {"c2_QuantizeLinear", "a2_QuantizeLinear", "g_QuantizeLinear", "y_QuantizeLinear"}
        assert set(reasons) == {n.origin for n in model.graph.nodes.values() if "Quantize" in (n.origin or "")}
        assert all("emulated in float32" in why for why in reasons.values())
        ops = {n.op for n in model.graph.nodes.values()}
        assert {"Convolution", "ConvolutionDepthWise", "InnerProduct"} <= ops
        assert all(n.params.get(8) for n in model.graph.nodes.values()
                   if n.op in ("Convolution", "ConvolutionDepthWise", "InnerProduct"))
    else:
        assert model.stats["int8_layers"] == 0
        conv_reasons = [why for name, why in model.stats["int8_fallbacks"].items() if "Conv" in name or "Gemm" in name]
        assert len(conv_reasons) == 3 and all("zero point" in why for why in conv_reasons)


@pytest.mark.parametrize("runtime", ["ncnn", "interpreter"])
def test_quantized_model_matches_onnxruntime(quantized, runtime):
    _, _, want, step, got = quantized
    err = np.abs(got[runtime] - want)
    assert err.max() <= step * (1 + 1e-5), (runtime, err.max(), step)
    assert np.mean(err > step / 2) <= 0.1, (runtime, np.mean(err > step / 2))


def test_cli_and_verify_report_int8(tmp_path_factory, tmp_path):
    import json
    import subprocess
    import sys

    from converter import verify
    path = _quantized(tmp_path_factory, True)
    result = subprocess.run([sys.executable, "-m", "converter", "convert", path, "-o", str(tmp_path), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["int8_layers"] == 3 and len(stats["int8_fallbacks"]) == 4
    report = verify(path, backend="interp")
    assert report.passed and report.int8_layers == 3 and "y_QuantizeLinear" in report.int8_fallbacks

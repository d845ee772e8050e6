"""QOperator models as onnxruntime's quantize_static writes them (com.microsoft QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat, QLinear(Global)AveragePool, QGemm):
each node runs as DequantizeLinear -> float op -> QuantizeLinear, int8 where ncnn can; real ncnn and
the interpreter against onnxruntime's own kernels for the node.

Tolerance, as tests/conversion/test_int8_models.py: onnxruntime's kernels requantize integer sums
(or look values up in tables) where the expansion rounds a float; the two can differ only for a value
next to a .5 step, by one step of the output. Every element within one step, at most a tenth off
(measured: none is). Inputs stay within the int8 range (|x| / scale <= 125): below -127.5 steps
ncnn's int8 layers clamp to -127 where onnxruntime keeps -128.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import random_inputs, run_converted_in_ncnn
from quantized_cases import QOPERATOR_OPS, Y_SCALE, qoperator_model, quantized_layout_model


def _onnxruntime(model, feeds) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3        # quiet about the initializers a case does not use
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def _assert_within_one_step(got: np.ndarray, want: np.ndarray, step: float, what) -> None:
    off = np.abs(got.reshape(want.shape) - want) / step
    assert off.max() <= 1 + 1e-4, (what, off.max())
    assert np.count_nonzero(off > 0.5) <= want.size // 10, (what, np.count_nonzero(off > 0.5))


@pytest.mark.parametrize("signed", [True, False], ids=["int8", "uint8_zero_point"])
@pytest.mark.parametrize("op", QOPERATOR_OPS)
def test_qoperator_node_matches_onnxruntime(tmp_path, op, signed):
    model = qoperator_model(op, signed)
    feeds = random_inputs(model, seed=1, low=-2.5, high=2.5)
    want = _onnxruntime(model, feeds)[0]
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    # QGemm without y_scale gives float: only the float sums' rounding differs
    step = 1e-4 * float(np.abs(want).max()) if op == "QGemmFloat" else Y_SCALE
    _assert_within_one_step(outputs["y"], want, step, (op, "ncnn"))
    _assert_within_one_step(converted.run(feeds)["y"], want, step, (op, "interpreter"))
    if op == "QGemm" and signed:          # symmetric int8 in, a constant int8 weight: ncnn's int8 InnerProduct
        assert converted.stats["int8_layers"] == 1


def test_quantized_tensors_moved_before_dequantizing(tmp_path):
    """The Q sinks below Reshape and Transpose (and Split), so the MatMul runs as ncnn's int8
    InnerProduct; MaxPool of int8 values runs in float on the same whole numbers."""
    model = quantized_layout_model()
    feeds = random_inputs(model, seed=2, low=-2.5, high=2.5)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert converted.stats["int8_layers"] == 1 and converted.stats["quantize_sunk"] == 3
    ours = converted.run(feeds)
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    # y1 is a float MatMul of quantized inputs: one input step moves it by xs * the largest weight
    matmul_step = float(values["xs"] * np.abs(values["w"] * values["ws"]).max())
    for name, want in zip(["y1", "y2", "y3", "y4"], _onnxruntime(model, feeds)):
        step = matmul_step if name == "y1" else float(values["xs"])
        _assert_within_one_step(outputs[name], want, step, (name, "ncnn"))
        _assert_within_one_step(ours[name], want, step, (name, "interpreter"))


@pytest.mark.parametrize("op,attrs,why", [
    ("QLinearSoftmax", {"axis": 1, "opset": 11}, "flattens from axis 1"),
    ("QLinearGlobalAveragePool", {"channels_last": 1}, "channels_last=1"),
])
def test_qoperator_nodes_it_cannot_expand_are_refused(op, attrs, why):
    model = qoperator_model(op, True)
    node = next(n for n in model.graph.node if n.op_type == op)
    del node.attribute[:]
    node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    with pytest.raises(ConversionError, match=why) as caught:
        convert(model)
    assert "\n" not in str(caught.value) and op in str(caught.value)


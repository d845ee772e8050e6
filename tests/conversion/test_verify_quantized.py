"""verify on quantized models: each layer judged on onnxruntime's values of its inputs, within one
step of its quantizer (converter/verification/forced_layers.py, converter/verification/quantization_steps.py). A right int8
file passes although its outputs drift by steps end to end; a layer given a wrong scale is named."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import converter.api as conversion     # verify converts through converter.api.convert_prepared
from converter import verify
from quantized_cases import qdq_chain_model, qdq_conv_chain, qlinear_model
from scripts.quantize_models import calibration_feeds, quantized

INT8_LAYERS = ("Convolution", "ConvolutionDepthWise", "InnerProduct")


@pytest.mark.parametrize("backend", ["interp", "ncnn"])
def test_right_int8_file_passes(backend):
    for model in (qlinear_model(), qdq_conv_chain()):
        report = verify(model, backend=backend)
        assert report.passed and report.int8_layers >= 2, report.divergences
    assert report.end_to_end and any("quantized model" in w for w in report.warnings)


@pytest.mark.parametrize("backend", ["interp", "ncnn"])
def test_a_clip_narrowed_into_the_conv_is_not_compared_with_the_unclipped_tensor(backend):
    """The Conv carries its output quantizer's clip (passes/narrow_quantize_clips.py): inputs beyond the
    calibrated range make its output differ from onnxruntime's unclipped tensor `a` by far more than a
    step, so the clipped blob must not keep that name (it did: verify named the Conv)."""
    x = np.random.default_rng(4).normal(0, 3, (1, 4, 6, 7)).astype(np.float32)
    report = verify(qdq_chain_model(), inputs={"x": x}, backend=backend)
    assert report.passed, report.divergences


@pytest.mark.parametrize("backend", ["interp", "ncnn"])
def test_wrong_weight_scale_is_named(monkeypatch, backend):
    """The first int8 layer's weight scales 1.5x too large (in the file, not the ONNX model): its
    output c1 is the first blob beyond one step."""
    broken = []

    def convert_with_a_wrong_scale(*args, **kwargs):
        model = convert_prepared(*args, **kwargs)
        layer = next(n for n in model.graph.topological() if n.op in INT8_LAYERS and n.params.get(8))
        layer.weights[-2] = np.asarray(layer.weights[-2], np.float32) * np.float32(1.5)
        broken.append(layer)
        return model
    convert_prepared = conversion.convert_prepared
    monkeypatch.setattr(conversion, "convert_prepared", convert_with_a_wrong_scale)
    report = verify(qdq_conv_chain(), backend=backend)
    assert not report.passed
    assert report.divergences[0].layer == broken[0].name, report.divergences


def test_real_qdq_model_passes_both_backends():
    """PP-OCRv4 rec in QDQ form failed verify twice over: a Conv carrying its output quantizer's clip was
    compared with the unclipped ONNX tensor, and a Conv after an AveragePool met its ties with ncnn's
    rounding (passes/narrow_quantize_clips.py, passes/apply_int8.py)."""
    name = "ppocrv4_rec_int8"
    report = verify(str(quantized(name)), inputs=calibration_feeds(name, seed=99)[0], backend="both")
    assert report.passed and report.int8_layers >= 40, report.divergences


def test_real_qoperator_model_passes_both_backends():
    """PP-OCRv4 det in QOperator form: real ncnn's x86 int8 depthwise rounds some values a step
    from onnxruntime (an approximate reciprocal), and end to end its text map moves by up to 0.85."""
    name = "ppocrv4_det_qop_int8"
    report = verify(str(quantized(name)), inputs=calibration_feeds(name, seed=99)[0], backend="both")
    assert report.passed, report.divergences
    assert max(o.max_abs for o in report.end_to_end) > 0.1      # what an end-to-end check would have failed


def _relu_between_pairs() -> "onnx.ModelProto":
    """qdq_conv_chain with quantize_static's Relu between the Convs: c1 -> Q/DQ -> Relu -> Q/DQ (the same
    scale) -> Conv. The Relu moves into the first Conv (passes/hoist_relu_over_qdq.py), so the second
    Conv reads a blob no ONNX tensor names."""
    model = qdq_conv_chain()
    nodes = list(model.graph.node)
    conv2 = next(n for n in nodes if n.op_type == "Conv" and n.input[0] == "c1d")
    conv2.input[0] = "rd"
    extra = [helper.make_node("Relu", ["c1d"], ["r"]), helper.make_node("QuantizeLinear", ["r", "c1s", "z"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "c1s", "z"], ["rd"])]
    at = nodes.index(conv2)
    del model.graph.node[:]
    model.graph.node.extend(nodes[:at] + extra + nodes[at:])
    return model


@pytest.mark.parametrize("backend", ["interp", "ncnn"])
def test_relu_hoisted_between_pairs_passes_and_a_wrong_scale_fails(monkeypatch, backend):
    """The right file passes; with the first Conv's weight scales wrong it fails. (Its output, the Relu
    fused in, has no ONNX name to compare with: the divergence shows further down, at `y`.)"""
    def convert_with_a_wrong_scale(*args, **kwargs):
        model = convert_prepared(*args, **kwargs)
        layers = [n for n in model.graph.topological() if n.op in INT8_LAYERS and n.params.get(8)]
        assert len(layers) == 2 and layers[0].params.get(9) == 1          # the Relu fused into the first
        layers[0].weights[-2] = np.asarray(layers[0].weights[-2], np.float32) * np.float32(1.5)
        return model
    assert verify(_relu_between_pairs(), backend=backend).passed
    convert_prepared = conversion.convert_prepared
    monkeypatch.setattr(conversion, "convert_prepared", convert_with_a_wrong_scale)
    assert not verify(_relu_between_pairs(), backend=backend).passed

"""verify on quantized models: each layer judged on onnxruntime's values of its inputs, within one
step of its quantizer (converter/forced_layers.py, converter/quantization_steps.py). A right int8
file passes although its outputs drift by steps end to end; a layer given a wrong scale is named."""
from __future__ import annotations

import numpy as np
import pytest

import converter.verification as verification
from converter import verify
from quantized_cases import qdq_conv_chain, qlinear_model
from scripts.quantize_models import calibration_feeds, quantized

INT8_LAYERS = ("Convolution", "ConvolutionDepthWise", "InnerProduct")


@pytest.mark.parametrize("backend", ["interp", "ncnn"])
def test_right_int8_file_passes(backend):
    for model in (qlinear_model(), qdq_conv_chain()):
        report = verify(model, backend=backend)
        assert report.passed and report.int8_layers >= 2, report.divergences
    assert report.end_to_end and any("quantized model" in w for w in report.warnings)


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
    convert_prepared = verification.convert_prepared
    monkeypatch.setattr(verification, "convert_prepared", convert_with_a_wrong_scale)
    report = verify(qdq_conv_chain(), backend=backend)
    assert not report.passed
    assert report.divergences[0].layer == broken[0].name, report.divergences


def test_real_qoperator_model_passes_both_backends():
    """PP-OCRv4 det in QOperator form: real ncnn's x86 int8 depthwise rounds some values a step
    from onnxruntime (an approximate reciprocal), and end to end its text map moves by up to 0.85."""
    name = "ppocrv4_det_qop_int8"
    report = verify(str(quantized(name)), inputs=calibration_feeds(name, seed=99)[0], backend="both")
    assert report.passed, report.divergences
    assert max(o.max_abs for o in report.end_to_end) > 0.1      # what an end-to-end check would have failed

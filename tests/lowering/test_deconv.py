"""ONNX ConvTranspose -> ncnn Deconvolution, in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def deconv_model(rng, shape, cout, kernel, bias=True, group=1, **attrs):
    cin = shape[1]
    w = rng.standard_normal((cin, cout // group, *kernel)).astype(np.float32) * 0.3
    inits = [("w", w)] + ([("b", rng.standard_normal(cout).astype(np.float32))] if bias else [])
    node = helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"], group=group, **attrs)
    return make_model([node], [("x", shape)], [("y", None)], inits)


@pytest.mark.parametrize("kernel, attrs", [
    ((2, 2), {"strides": [2, 2]}),                                       # PP-OCR det's upsampler
    ((3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    ((3, 2), {"strides": [2, 1], "pads": [0, 1, 2, 0]}),
    ((3, 3), {"dilations": [2, 2], "pads": [1, 0, 0, 1]}),
    ((4, 4), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((3, 3), {"strides": [2, 2], "output_shape": [10, 12]}),
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose(tmp_path, rng, kernel, attrs, bias):
    model = deconv_model(rng, [1, 4, 5, 6], 3, kernel, bias=bias, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted) == ["Input", "Deconvolution"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_conv_transpose_1d(tmp_path, rng):
    model = deconv_model(rng, [1, 4, 7], 2, (3,), strides=[2], pads=[1, 0])
    check_in_ncnn(model, tmp_path)


def test_grouped_conv_transpose_is_refused(rng):
    with pytest.raises(ConversionError, match="group 2"):
        convert(deconv_model(rng, [1, 4, 5, 6], 4, (3, 3), group=2))

"""ConvTranspose -> ncnn Deconvolution / DeconvolutionDepthWise, real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter.ir import ConversionError
from onnx_cases import (assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn,
                        make_model, ncnn_layer_types)


def deconv_model(x_shape, w_shape, bias=True, **attrs):
    rng = np.random.default_rng(3)
    inits = [("W", rng.uniform(-1, 1, w_shape).astype(np.float32))]
    if bias:
        group = attrs.get("group", 1)
        inits.append(("B", rng.uniform(-1, 1, w_shape[1] * group).astype(np.float32)))
    node = helper.make_node("ConvTranspose", ["x", "W"] + (["B"] if bias else []), ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)], inits)


CASES = {
    "k2_s2_ppocr": ((1, 8, 5, 6), (8, 4, 2, 2), True, dict(strides=[2, 2], pads=[0, 0, 0, 0])),
    "k3_s1": ((1, 3, 5, 5), (3, 4, 3, 3), True, {}),
    "no_bias": ((1, 3, 5, 4), (3, 2, 3, 3), False, dict(strides=[2, 2])),
    "pads": ((1, 3, 5, 6), (3, 4, 3, 3), True, dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "asym_pads": ((1, 3, 5, 6), (3, 4, 3, 4), True, dict(strides=[2, 3], pads=[0, 2, 1, 1])),
    "dilated": ((1, 2, 4, 5), (2, 3, 3, 3), True, dict(dilations=[2, 1], strides=[2, 2])),
    "output_padding": ((1, 3, 4, 5), (3, 2, 3, 3), True,
                       dict(strides=[2, 3], pads=[1, 1, 1, 1], output_padding=[1, 2])),
    "same_upper": ((1, 3, 4, 5), (3, 2, 3, 3), True, dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    "same_lower": ((1, 3, 4, 5), (3, 2, 4, 3), True, dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    "valid": ((1, 3, 4, 5), (3, 2, 3, 3), True, dict(strides=[2, 2], auto_pad="VALID")),
    "output_shape": ((1, 3, 4, 5), (3, 2, 3, 3), True, dict(strides=[2, 2], output_shape=[8, 9])),
    "output_shape_upper": ((1, 3, 4, 5), (3, 2, 3, 3), True,
                           dict(strides=[2, 2], output_shape=[8, 10], auto_pad="SAME_UPPER")),
    "group2": ((1, 4, 5, 4), (4, 3, 3, 3), True, dict(group=2, strides=[2, 2], pads=[1, 0, 0, 1])),
    "depthwise": ((1, 4, 5, 4), (4, 1, 3, 3), True, dict(group=4, strides=[2, 2], pads=[1, 1, 1, 1])),
    "depthwise_multiplier": ((1, 3, 4, 4), (3, 2, 2, 2), False, dict(group=3, strides=[2, 2])),
    "deconv1d": ((1, 3, 6), (3, 4, 3), True, dict(strides=[2], pads=[1, 0], output_padding=[1])),
    "deconv1d_grouped": ((1, 4, 5), (4, 2, 3), True, dict(group=2, dilations=[2])),
}


@pytest.mark.parametrize("name", CASES)
def test_conv_transpose_in_real_ncnn(name, tmp_path):
    x_shape, w_shape, bias, attrs = CASES[name]
    model = deconv_model(x_shape, w_shape, bias, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    group = attrs.get("group", 1)
    assert ("DeconvolutionDepthWise" if group > 1 else "Deconvolution") in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("attrs", [dict(strides=[2, 2], pads=[1, 0, 0, 1]),
                                   dict(strides=[2, 2], auto_pad="SAME_LOWER", group=3)],
                         ids=["explicit", "same_lower_depthwise"])
def test_conv_transpose_dynamic_size_one_file_many_sizes(attrs, tmp_path):
    w_shape = (3, 1, 3, 3) if attrs.get("group") else (3, 4, 3, 3)
    assert_one_file_many_sizes(deconv_model((1, 3, "H", "W"), w_shape, **attrs), tmp_path,
                               [(4, 5), (7, 3)])


def test_conv_transpose_output_larger_than_full_is_refused():
    model = deconv_model((1, 3, 4, 4), (3, 2, 3, 3), strides=[2, 2], output_shape=[11, 11])
    from converter import convert
    with pytest.raises(ConversionError, match="ConvTranspose node.*larger than the full"):
        convert(model)

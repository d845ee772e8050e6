"""Conv -> ncnn Convolution / ConvolutionDepthWise, run in the real ncnn runtime against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, make_model


def conv_model(x_shape, w_shape, bias=True, **attrs):
    rng = np.random.default_rng(7)
    inits = [("W", rng.uniform(-1, 1, w_shape).astype(np.float32))]
    if bias:
        inits.append(("B", rng.uniform(-1, 1, w_shape[0]).astype(np.float32)))
    node = helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)], inits)


CASES = {
    "3x3_pad1": ((1, 3, 8, 8), (5, 3, 3, 3), True, dict(pads=[1, 1, 1, 1])),
    "no_bias_stride2": ((1, 3, 9, 8), (4, 3, 3, 3), False, dict(strides=[2, 2])),
    "rect_kernel_asym_pads": ((1, 2, 7, 9), (3, 2, 3, 2), True, dict(pads=[0, 1, 2, 1])),
    "dilated": ((1, 3, 10, 10), (4, 3, 3, 3), True, dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
    "mixed_stride_dilation": ((1, 3, 11, 12), (4, 3, 3, 3), True, dict(strides=[2, 1], dilations=[1, 2])),
    "group2": ((1, 4, 6, 6), (6, 2, 3, 3), True, dict(group=2, pads=[1, 1, 1, 1])),
    "depthwise": ((1, 4, 6, 7), (4, 1, 3, 3), True, dict(group=4, pads=[1, 1, 1, 1])),
    "depthwise_multiplier": ((1, 4, 6, 6), (8, 1, 3, 3), False, dict(group=4, strides=[2, 2])),
    "same_upper": ((1, 3, 7, 8), (4, 3, 3, 3), True, dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "same_lower_even_kernel": ((1, 3, 7, 8), (4, 3, 4, 4), True,
                               dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    "same_kernel_below_stride": ((1, 3, 8, 7), (4, 3, 1, 1), True,
                                 dict(auto_pad="SAME_UPPER", strides=[3, 3])),
    "valid": ((1, 3, 7, 8), (4, 3, 3, 3), True, dict(auto_pad="VALID")),
    "kernel_shape_given": ((1, 3, 6, 6), (2, 3, 3, 3), True, dict(kernel_shape=[3, 3])),
    "1x1": ((1, 8, 5, 5), (4, 8, 1, 1), True, {}),
    "conv1d": ((1, 4, 10), (6, 4, 3), True, dict(pads=[1, 2], strides=[2])),
    "conv1d_group_dilated": ((1, 4, 12), (4, 2, 3), False, dict(group=2, dilations=[2])),
    "conv1d_same_upper": ((1, 3, 9), (2, 3, 4), True, dict(auto_pad="SAME_UPPER")),
}


@pytest.mark.parametrize("name", CASES)
def test_conv_in_real_ncnn(name, tmp_path):
    x_shape, w_shape, bias, attrs = CASES[name]
    converted = check_in_ncnn(conv_model(x_shape, w_shape, bias, **attrs), tmp_path)
    types = [n.op for n in converted.graph.nodes.values()]
    group = attrs.get("group", 1)
    assert ("ConvolutionDepthWise" if group > 1 else "Convolution") in types
    assert types.count("Reshape") == (2 if len(x_shape) == 3 else 0)


@pytest.mark.parametrize("attrs", [dict(pads=[1, 0, 2, 1], strides=[2, 2]),
                                   dict(auto_pad="SAME_UPPER", strides=[2, 2]),
                                   dict(auto_pad="SAME_LOWER", strides=[2, 1], group=3)],
                         ids=["explicit", "same_upper", "same_lower_depthwise"])
def test_conv_dynamic_size_one_file_many_sizes(attrs, tmp_path):
    """Symbolic H, W: SAME padding is left to ncnn's run-time rule; the same file serves every size."""
    w_shape = (3, 1, 3, 3) if attrs.get("group") else (4, 3, 3, 3)
    model = conv_model((1, 3, "H", "W"), w_shape, True, **attrs)
    assert_one_file_many_sizes(model, tmp_path, [(7, 8), (10, 5), (16, 16)])

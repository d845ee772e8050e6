"""3-D Conv / MaxPool / AveragePool / global pools on (1, C, D, H, W) -> ncnn Convolution3D /
Pooling3D, real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def conv3d_model(x_shape, w_shape, bias=True, **attrs):
    rng = np.random.default_rng(5)
    inits = [("W", rng.uniform(-1, 1, w_shape).astype(np.float32))]
    if bias:
        inits.append(("B", rng.uniform(-1, 1, w_shape[0]).astype(np.float32)))
    node = helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)], inits)


def pool_model(op, x_shape, **attrs):
    return make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x_shape)], [("y", None)])


CONV_CASES = {
    "k3": ((1, 2, 4, 5, 6), (3, 2, 3, 3, 3), True, {}),
    "no_bias_stride": ((1, 2, 5, 6, 7), (4, 2, 2, 3, 2), False, dict(strides=[2, 1, 3])),
    "asym_pads_dilated": ((1, 3, 5, 6, 5), (2, 3, 3, 2, 3), True,
                          dict(pads=[1, 0, 2, 0, 1, 1], dilations=[1, 2, 2])),
    "same_upper": ((1, 2, 5, 4, 6), (2, 2, 2, 3, 3), True, dict(auto_pad="SAME_UPPER", strides=[2, 2, 1])),
    "same_lower": ((1, 2, 5, 4, 6), (2, 2, 2, 2, 3), True, dict(auto_pad="SAME_LOWER")),
    "grouped": ((1, 4, 4, 5, 6), (6, 2, 3, 3, 3), True, dict(group=2, pads=[1, 0, 1, 0, 1, 1])),
    "depthwise": ((1, 3, 4, 5, 6), (3, 1, 3, 3, 3), False, dict(group=3, strides=[1, 2, 2])),
}


@pytest.mark.parametrize("name", CONV_CASES)
def test_conv3d_in_real_ncnn(name, tmp_path):
    x_shape, w_shape, bias, attrs = CONV_CASES[name]
    model = conv3d_model(x_shape, w_shape, bias, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    grouped = attrs.get("group", 1) > 1
    assert ncnn_layer_types(converted).count("ConvolutionDepthWise3D" if grouped else "Convolution3D") == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


POOL_CASES = {
    "max": ("MaxPool", dict(kernel_shape=[2, 2, 2])),
    "max_stride_pads": ("MaxPool", dict(kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])),
    "max_ceil": ("MaxPool", dict(kernel_shape=[2, 3, 2], strides=[2, 2, 2], ceil_mode=1)),
    "avg_exclude_pad": ("AveragePool", dict(kernel_shape=[3, 3, 3], strides=[1, 2, 2], pads=[1, 1, 1, 1, 1, 1])),
    "avg_include_pad": ("AveragePool", dict(kernel_shape=[3, 2, 3], pads=[1, 0, 1, 1, 1, 0], count_include_pad=1)),
    "avg_ceil": ("AveragePool", dict(kernel_shape=[2, 2, 3], strides=[2, 2, 2], ceil_mode=1)),
    "avg_same_upper": ("AveragePool", dict(kernel_shape=[2, 3, 2], strides=[2, 2, 1], auto_pad="SAME_UPPER")),
    "max_same_lower": ("MaxPool", dict(kernel_shape=[2, 2, 3], auto_pad="SAME_LOWER")),
    "global_avg": ("GlobalAveragePool", {}),
    "global_max": ("GlobalMaxPool", {}),
}


@pytest.mark.parametrize("name", POOL_CASES)
def test_pool3d_in_real_ncnn(name, tmp_path):
    op, attrs = POOL_CASES[name]
    model = pool_model(op, (1, 3, 5, 6, 7), **attrs)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted).count("Pooling3D") == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_conv3d_and_pool_with_run_time_sizes(tmp_path):
    """Explicit pads need no sizes: one file at any D, H, W."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2, 2], strides=[2, 2, 2])]
    model = make_model(nodes, [("x", (1, 2, "D", "H", "W"))], [("y", None)],
                       [("W", rng.uniform(-1, 1, (3, 2, 3, 3, 3)).astype(np.float32))])
    for dims in [dict(D=4, H=6, W=5), dict(D=6, H=3, W=8)]:
        check_in_ncnn(model, tmp_path, dims=dims, input_shapes={"x": [1, 2, dims["D"], dims["H"], dims["W"]]})


@pytest.mark.parametrize("model, why", [
    (lambda: conv3d_model((1, 4, 4, 5, 6), (4, 3, 3, 3, 3), group=2), "with group 2 does not fit 4 input"),
    (lambda: conv3d_model((1, 2, "D", 5, 6), (2, 2, 3, 3, 3), auto_pad="SAME_LOWER"), "needs known spatial sizes"),
    (lambda: pool_model("AveragePool", (1, 3, 5, 6, 7), kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1,
                        count_include_pad=1), "count the partial window"),
    (lambda: pool_model("MaxPool", (1, 3, 5, 6, 7), kernel_shape=[2, 2, 2], dilations=[2, 1, 1]), "no dilation"),
], ids=["grouped", "same_dynamic", "ceil_include_pad", "dilated_pool"])
def test_refused_in_one_line(model, why):
    with pytest.raises(ConversionError, match=why) as info:
        convert(model())
    assert "\n" not in str(info.value)


DECONV_CASES = {
    "k3": ((1, 2, 3, 4, 5), (2, 3, 3, 3, 3), True, {}),
    "stride_pads": ((1, 3, 3, 4, 3), (3, 2, 2, 3, 3), False, dict(strides=[2, 1, 2], pads=[0, 1, 1, 1, 0, 1])),
    "dilated_output_padding": ((1, 2, 3, 3, 4), (2, 2, 2, 2, 3), True,
                               dict(strides=[2, 3, 2], dilations=[1, 2, 1], output_padding=[1, 2, 0])),
    "same_upper": ((1, 2, 3, 4, 4), (2, 3, 3, 2, 3), True, dict(strides=[2, 2, 2], auto_pad="SAME_UPPER")),
    "grouped": ((1, 4, 3, 3, 4), (4, 3, 2, 3, 2), True, dict(group=2, strides=[2, 1, 2], pads=[0, 1, 0, 1, 0, 0])),
    "depthwise": ((1, 3, 3, 4, 3), (3, 1, 3, 2, 2), False, dict(group=3, strides=[1, 2, 2])),
}


@pytest.mark.parametrize("name", DECONV_CASES)
def test_conv_transpose3d_in_real_ncnn(name, tmp_path):
    x_shape, w_shape, bias, attrs = DECONV_CASES[name]
    rng = np.random.default_rng(7)
    inits = [("W", rng.uniform(-1, 1, w_shape).astype(np.float32))]
    if bias:
        inits.append(("B", rng.uniform(-1, 1, w_shape[1] * attrs.get("group", 1)).astype(np.float32)))
    node = helper.make_node("ConvTranspose", ["x", "W"] + (["B"] if bias else []), ["y"], **attrs)
    model = make_model([node], [("x", x_shape)], [("y", None)], inits)
    converted = check_in_ncnn(model, tmp_path)
    grouped = attrs.get("group", 1) > 1
    assert ncnn_layer_types(converted).count("DeconvolutionDepthWise3D" if grouped else "Deconvolution3D") == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)

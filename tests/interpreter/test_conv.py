"""Convolution, ConvolutionDepthWise and Deconvolution against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from converter.interpreter.kernels import convolution as conv_kernels

from .layer_check import check, ids, interpret

ACTIVATIONS = {0: [], 1: [], 2: [0.1], 3: [-0.3, 0.4], 4: [], 5: [], 6: [0.2, 0.5]}

GEOMETRY = [
    dict(kernel_w=3),
    dict(kernel_w=1),
    dict(kernel_w=3, stride_w=2),
    dict(kernel_w=3, kernel_h=2, stride_w=2, stride_h=1),
    dict(kernel_w=3, dilation_w=2),
    dict(kernel_w=2, kernel_h=3, dilation_w=1, dilation_h=2, stride_w=3),
    dict(kernel_w=3, pad_left=1),
    dict(kernel_w=3, pad_left=1, pad_right=2, pad_top=0, pad_bottom=1),
    dict(kernel_w=3, pad_left=2, pad_value=1.5),
    dict(kernel_w=3, stride_w=2, pad_left=-233),
    dict(kernel_w=4, stride_w=2, pad_left=-234),
    dict(kernel_w=5, stride_w=1, pad_left=-233),
    # horizontal stride 1 with other vertical steps: the flat-row columns' row stride
    dict(kernel_w=3, kernel_h=2, stride_w=1, stride_h=2, pad_left=1),
    dict(kernel_w=2, kernel_h=3, dilation_w=2, dilation_h=3, pad_left=1, pad_right=0, pad_top=2, pad_bottom=1),
]


@pytest.fixture
def small_bands(monkeypatch):
    """256 KiB im2col bands, so that test-sized inputs need several (the real size is tuned for speed)."""
    monkeypatch.setattr(conv_kernels, "BAND_FLOATS", 1 << 16)


def conv_case(rng, op, in_c, out_c, group=1, bias=True, activation=0, **geometry):
    kh, kw = geometry.get("kernel_h", geometry["kernel_w"]), geometry["kernel_w"]
    size = out_c * (in_c // group) * kh * kw
    params = dict(num_output=out_c, bias_term=int(bias), weight_data_size=size, activation_type=activation,
                  **geometry)
    if ACTIVATIONS[activation]:
        params["activation_params"] = ACTIVATIONS[activation]
    if op == "ConvolutionDepthWise":
        params["group"] = group
    fan_in = (in_c // group) * kh * kw
    weights = [(rng.standard_normal(size) / np.sqrt(fan_in)).astype(np.float32)]
    if bias:
        weights.append(rng.standard_normal(out_c).astype(np.float32))
    return ids(op, **params), weights


@pytest.mark.parametrize("geometry", GEOMETRY, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
@pytest.mark.parametrize("in_c,out_c", [(3, 4), (16, 8)])
def test_convolution_geometry(tmp_path, rng, geometry, in_c, out_c):
    params, weights = conv_case(rng, "Convolution", in_c, out_c, **geometry)
    x = rng.standard_normal((in_c, 9, 11)).astype(np.float32)
    check(tmp_path, "Convolution", params, [x], weights)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_convolution_fused_activation(tmp_path, rng, activation):
    params, weights = conv_case(rng, "Convolution", 4, 6, activation=activation, kernel_w=3, pad_left=1)
    x = rng.standard_normal((4, 7, 8)).astype(np.float32) * 2
    check(tmp_path, "Convolution", params, [x], weights)


def test_convolution_without_bias(tmp_path, rng):
    params, weights = conv_case(rng, "Convolution", 5, 3, bias=False, kernel_w=2, stride_w=2)
    check(tmp_path, "Convolution", params, [rng.standard_normal((5, 6, 7)).astype(np.float32)], weights)


@pytest.mark.parametrize("channels,group,out_c", [(4, 4, 4), (16, 16, 16), (6, 2, 4), (8, 4, 8), (16, 2, 16), (6, 3, 6)])
@pytest.mark.parametrize("geometry", [GEOMETRY[0], GEOMETRY[2], GEOMETRY[5], GEOMETRY[9]],
                         ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
def test_depthwise_and_grouped(tmp_path, rng, channels, group, out_c, geometry):
    params, weights = conv_case(rng, "ConvolutionDepthWise", channels, out_c, group=group, activation=1, **geometry)
    x = rng.standard_normal((channels, 9, 10)).astype(np.float32)
    check(tmp_path, "ConvolutionDepthWise", params, [x], weights)


@pytest.mark.parametrize("op,channels,group,out_c", [("Convolution", 8, 1, 8), ("ConvolutionDepthWise", 8, 8, 8),
                                                      ("ConvolutionDepthWise", 8, 2, 6)])
@pytest.mark.parametrize("geometry", [GEOMETRY[0], GEOMETRY[5], GEOMETRY[9]],
                         ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
def test_large_inputs_built_in_several_im2col_bands(tmp_path, rng, small_bands, op, channels, group, out_c, geometry):
    """An input whose columns exceed one band (and leave a partial last band) still matches ncnn."""
    params, weights = conv_case(rng, op, channels, out_c, group=group, activation=1, **geometry)
    x = rng.standard_normal((channels, 131, 121)).astype(np.float32)
    check(tmp_path, op, params, [x], weights)


@pytest.mark.parametrize("op,channels,group,out_c", [("ConvolutionDepthWise", 6, 6, 6), ("ConvolutionDepthWise", 6, 3, 6)])
def test_large_planes_banded_by_rows_across_groups(tmp_path, rng, small_bands, op, channels, group, out_c):
    """Groups whose flat-row columns exceed one band each: bands of rows across every group."""
    params, weights = conv_case(rng, op, channels, out_c, group=group, activation=1, kernel_w=3, pad_left=1)
    x = rng.standard_normal((channels, 90, 85)).astype(np.float32)
    check(tmp_path, op, params, [x], weights)


@pytest.mark.parametrize("channels,group,out_c,size", [(14, 14, 14, (40, 40)), (16, 8, 16, (30, 30)),
                                                       (12, 12, 12, (41, 37))])
@pytest.mark.parametrize("geometry", [GEOMETRY[0], GEOMETRY[2], GEOMETRY[5]],
                         ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
def test_many_groups_built_a_few_groups_per_band(tmp_path, rng, small_bands, channels, group, out_c, size, geometry):
    """Depthwise/grouped layers whose groups are banded several at a time (last band partial)."""
    params, weights = conv_case(rng, "ConvolutionDepthWise", channels, out_c, group=group, activation=2,
                                **geometry)
    x = rng.standard_normal((channels, *size)).astype(np.float32)
    check(tmp_path, "ConvolutionDepthWise", params, [x], weights)


DECONV = [
    dict(kernel_w=3),
    dict(kernel_w=3, stride_w=2),
    dict(kernel_w=4, kernel_h=2, stride_w=2, stride_h=3),
    dict(kernel_w=3, dilation_w=2, stride_w=2),
    dict(kernel_w=3, stride_w=2, pad_left=1),
    dict(kernel_w=3, stride_w=2, pad_left=1, pad_right=0, pad_top=2, pad_bottom=1),
    dict(kernel_w=3, stride_w=2, output_pad_right=1),
    dict(kernel_w=3, stride_w=2, pad_left=1, output_pad_right=1, output_pad_bottom=0),
    dict(kernel_w=3, stride_w=2, pad_left=-233, output_w=10, output_h=12),
    dict(kernel_w=4, stride_w=2, pad_left=-234, output_w=11, output_h=11),
    # stride equal to the kernel: patches tile the output without overlap
    dict(kernel_w=2, stride_w=2),
    dict(kernel_w=3, kernel_h=1, stride_w=3, stride_h=1, dilation_h=2),
    dict(kernel_w=2, stride_w=2, pad_left=1, pad_right=0, pad_top=0, pad_bottom=1),
    dict(kernel_w=2, stride_w=2, output_pad_right=1, output_pad_bottom=1),
]


@pytest.mark.parametrize("geometry", DECONV, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
@pytest.mark.parametrize("in_c,out_c", [(3, 2), (16, 8)])
def test_deconvolution(tmp_path, rng, geometry, in_c, out_c):
    params, weights = conv_case(rng, "Deconvolution", in_c, out_c, activation=2, **geometry)
    x = rng.standard_normal((in_c, 6, 5)).astype(np.float32)
    check(tmp_path, "Deconvolution", params, [x], weights)


def test_conv_rejects_wrong_channel_count(rng):
    params, weights = conv_case(rng, "Convolution", 3, 4, kernel_w=3)
    with pytest.raises(InterpreterError, match="Convolution layer 'layer'.*weight has 108 values"):
        interpret("Convolution", params, [np.zeros((5, 8, 8), np.float32)], weights)


def test_conv_rejects_non_3d_input(rng):
    params, weights = conv_case(rng, "Convolution", 3, 4, kernel_w=3)
    with pytest.raises(InterpreterError, match=r"input shapes \(3, 8\)"):
        interpret("Convolution", params, [np.zeros((3, 8), np.float32)], weights)

"""Convolution1D, ConvolutionDepthWise1D and Deconvolution1D against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

ACTIVATIONS = {0: [], 1: [], 2: [0.1], 3: [-0.3, 0.4], 4: [], 5: [], 6: [0.2, 0.5]}

GEOMETRY = [
    dict(kernel_w=3),
    dict(kernel_w=1),
    dict(kernel_w=3, stride_w=2),
    dict(kernel_w=3, dilation_w=2),
    dict(kernel_w=2, dilation_w=3, stride_w=3),
    dict(kernel_w=3, pad_left=1),
    dict(kernel_w=3, pad_left=1, pad_right=2),
    dict(kernel_w=3, pad_left=0, pad_right=2, pad_value=1.5),
    dict(kernel_w=3, stride_w=2, pad_left=-233),
    dict(kernel_w=4, stride_w=2, pad_left=-234),
    dict(kernel_w=5, dilation_w=2, pad_left=-233, pad_value=-0.5),
]
label = lambda g: ",".join(f"{k}={v}" for k, v in g.items())  # noqa: E731


def conv1d_case(rng, op, in_c, out_c, group=1, bias=True, activation=0, **geometry):
    size = out_c * (in_c // group) * geometry["kernel_w"]
    params = dict(num_output=out_c, bias_term=int(bias), weight_data_size=size, activation_type=activation,
                  **geometry)
    if ACTIVATIONS[activation]:
        params["activation_params"] = ACTIVATIONS[activation]
    if op == "ConvolutionDepthWise1D":
        params["group"] = group
    fan_in = (in_c // group) * geometry["kernel_w"]
    weights = [(rng.standard_normal(size) / np.sqrt(fan_in)).astype(np.float32)]
    if bias:
        weights.append(rng.standard_normal(out_c).astype(np.float32))
    return ids(op, **params), weights


@pytest.mark.parametrize("geometry", GEOMETRY, ids=label)
@pytest.mark.parametrize("in_c,out_c", [(3, 4), (16, 8)])
def test_convolution1d_geometry(tmp_path, rng, geometry, in_c, out_c):
    params, weights = conv1d_case(rng, "Convolution1D", in_c, out_c, **geometry)
    check(tmp_path, "Convolution1D", params, [rng.standard_normal((in_c, 13)).astype(np.float32)], weights)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_convolution1d_fused_activation_without_bias(tmp_path, rng, activation):
    params, weights = conv1d_case(rng, "Convolution1D", 4, 6, bias=False, activation=activation,
                                  kernel_w=3, pad_left=1)
    x = rng.standard_normal((4, 20)).astype(np.float32) * 2
    check(tmp_path, "Convolution1D", params, [x], weights)


@pytest.mark.parametrize("channels,group,out_c", [(4, 4, 4), (16, 16, 16), (6, 2, 4), (8, 4, 8), (6, 3, 6)])
@pytest.mark.parametrize("geometry", [GEOMETRY[0], GEOMETRY[4], GEOMETRY[7], GEOMETRY[8]], ids=label)
def test_depthwise1d_and_grouped(tmp_path, rng, channels, group, out_c, geometry):
    params, weights = conv1d_case(rng, "ConvolutionDepthWise1D", channels, out_c, group=group, activation=1,
                                  **geometry)
    x = rng.standard_normal((channels, 17)).astype(np.float32)
    check(tmp_path, "ConvolutionDepthWise1D", params, [x], weights)


def test_long_audio_like_input(tmp_path, rng):
    """A long signal builds its im2col columns in several bands."""
    params, weights = conv1d_case(rng, "Convolution1D", 8, 16, activation=1, kernel_w=5, stride_w=2, pad_left=2)
    check(tmp_path, "Convolution1D", params, [rng.standard_normal((8, 5000)).astype(np.float32)], weights)


DECONV = [
    dict(kernel_w=3),
    dict(kernel_w=3, stride_w=2),
    dict(kernel_w=4, stride_w=3, dilation_w=2),
    dict(kernel_w=3, stride_w=2, pad_left=1),
    dict(kernel_w=3, stride_w=2, pad_left=2, pad_right=0),
    dict(kernel_w=3, stride_w=2, output_pad_right=1),
    dict(kernel_w=3, stride_w=2, pad_left=1, output_pad_right=1),
    dict(kernel_w=3, stride_w=2, pad_left=-233, output_w=10),
    dict(kernel_w=4, stride_w=2, pad_left=-234, output_w=11),
]


@pytest.mark.parametrize("geometry", DECONV, ids=label)
@pytest.mark.parametrize("in_c,out_c,activation", [(3, 2, 2), (16, 8, 0)])
def test_deconvolution1d(tmp_path, rng, geometry, in_c, out_c, activation):
    params, weights = conv1d_case(rng, "Deconvolution1D", in_c, out_c, activation=activation, **geometry)
    check(tmp_path, "Deconvolution1D", params, [rng.standard_normal((in_c, 7)).astype(np.float32)], weights)


def test_deconvolution1d_without_bias(tmp_path, rng):
    params, weights = conv1d_case(rng, "Deconvolution1D", 4, 5, bias=False, kernel_w=2, stride_w=2)
    check(tmp_path, "Deconvolution1D", params, [rng.standard_normal((4, 6)).astype(np.float32)], weights)


def test_conv1d_rejects_wrong_channel_count(rng):
    params, weights = conv1d_case(rng, "Convolution1D", 3, 4, kernel_w=3)
    with pytest.raises(InterpreterError, match="Convolution1D layer 'layer'.*weight has 36 values"):
        interpret("Convolution1D", params, [np.zeros((5, 8), np.float32)], weights)


@pytest.mark.parametrize("op,group", [("Convolution1D", 1), ("ConvolutionDepthWise1D", 1), ("Deconvolution1D", 1)])
def test_a_1d_blob_is_one_channel(tmp_path, rng, op, group):
    params, weights = conv1d_case(rng, op, 1, 3, group=group, kernel_w=3, stride_w=2)
    check(tmp_path, op, params, [rng.standard_normal(11).astype(np.float32)], weights)


@pytest.mark.parametrize("op,pads", [("Convolution1D", (2, -233)), ("Convolution1D", (-233, 1)),
                                     ("Deconvolution1D", (-233, 2))])
def test_positive_pad_beside_negative_is_refused(rng, op, pads):
    """Real ncnn fails (Convolution1D, code -100) or cuts 237 columns too many (Deconvolution1D)."""
    params, weights = conv1d_case(rng, op, 2, 2, kernel_w=3, pad_left=pads[0], pad_right=pads[1])
    with pytest.raises(InterpreterError, match="positive pad meets a negative one"):
        interpret(op, params, [np.zeros((2, 9), np.float32)], weights)


def test_deconvolution1d_output_w_needs_same_pads(rng):
    """ncnn's cut_padding leaves the blob empty (code -100) for output_w without -233/-234."""
    params, weights = conv1d_case(rng, "Deconvolution1D", 2, 2, kernel_w=3, stride_w=2, output_w=9)
    with pytest.raises(InterpreterError, match="need pad -233 or -234"):
        interpret("Deconvolution1D", params, [np.zeros((2, 5), np.float32)], weights)


@pytest.mark.parametrize("shape", [(2, 3, 9), (1, 1, 1, 9)])
def test_rank_3_and_4_inputs_are_refused(rng, shape):
    params, weights = conv1d_case(rng, "Convolution1D", 2, 2, kernel_w=3)
    with pytest.raises(InterpreterError, match="read rank 1 or 2 only"):
        interpret("Convolution1D", params, [np.zeros(shape, np.float32)], weights)

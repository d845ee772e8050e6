"""ConvolutionDepthWise3D, Deconvolution3D and DeconvolutionDepthWise3D against the real ncnn: geometry, bias, fused
activation, output pads."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret


def layer_case(rng, op, in_c, out_c, group=1, bias=True, **params):
    kernel = [params.get(f"kernel_{a}", params["kernel_w"]) for a in "dhw"]
    size = out_c * (in_c // group) * int(np.prod(kernel))
    named = dict(num_output=out_c, bias_term=int(bias), weight_data_size=size, **params)
    if op in ("ConvolutionDepthWise3D", "DeconvolutionDepthWise3D"):
        named["group"] = group
    weights = [rng.standard_normal(size) / np.sqrt(size / out_c)] + ([rng.standard_normal(out_c)] if bias else [])
    return ids(op, **named), weights


@pytest.mark.parametrize("group,in_c,out_c,params", [
    (2, 4, 6, dict(kernel_w=3)),
    (3, 3, 3, dict(kernel_w=3, kernel_d=2, stride_w=2, pad_left=1, pad_front=0, pad_behind=1)),
    (4, 4, 8, dict(kernel_w=2, dilation_h=2, activation_type=1)),
], ids=["grouped", "depthwise_pads", "multiplier_relu"])
def test_convolution_depthwise3d(tmp_path, rng, group, in_c, out_c, params):
    layer_params, weights = layer_case(rng, "ConvolutionDepthWise3D", in_c, out_c, group, **params)
    check(tmp_path, "ConvolutionDepthWise3D", layer_params, [rng.standard_normal((in_c, 4, 5, 6))], weights)


@pytest.mark.parametrize("params", [
    dict(kernel_w=3),
    dict(kernel_w=2, stride_w=2, stride_d=1, dilation_h=2, bias_term_off=True),
    dict(kernel_w=3, stride_w=2, pad_left=1, pad_right=0, pad_front=0, pad_behind=2, output_pad_right=1,
         output_pad_behind=1, output_pad_bottom=0),
    dict(kernel_w=2, stride_h=3, activation_type=2, activation_params=[0.1]),
], ids=["k3", "stride_dilation_nobias", "pads_output_pads", "leaky"])
def test_deconvolution3d(tmp_path, rng, params):
    bias = not params.pop("bias_term_off", False)
    layer_params, weights = layer_case(rng, "Deconvolution3D", 3, 2, bias=bias, **params)
    check(tmp_path, "Deconvolution3D", layer_params, [rng.standard_normal((3, 3, 4, 5))], weights)


@pytest.mark.parametrize("group,in_c,out_c", [(2, 4, 6), (3, 3, 3)], ids=["grouped", "depthwise"])
def test_deconvolution_depthwise3d(tmp_path, rng, group, in_c, out_c):
    layer_params, weights = layer_case(rng, "DeconvolutionDepthWise3D", in_c, out_c, group, kernel_w=2,
                                       kernel_d=3, stride_w=2, pad_left=1, output_pad_bottom=1)
    check(tmp_path, "DeconvolutionDepthWise3D", layer_params, [rng.standard_normal((in_c, 3, 4, 3))], weights)


def test_deconvolution3d_same_codes_refused(rng):
    layer_params, weights = layer_case(rng, "Deconvolution3D", 2, 2, kernel_w=3, pad_left=-233, output_w=6)
    with pytest.raises(InterpreterError, match="only explicit"):
        interpret("Deconvolution3D", layer_params, [np.zeros((2, 3, 3, 3))], weights)

"""DeconvolutionDepthWise (grouped and depthwise transposed convolution) against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret
from .test_conv import DECONV

GROUPS = [(4, 4, 4), (8, 8, 8), (6, 2, 4), (8, 4, 8), (4, 2, 6), (16, 16, 16)]


def deconv_dw_case(rng, in_c, out_c, group, bias=True, activation=0, **geometry):
    kh, kw = geometry.get("kernel_h", geometry["kernel_w"]), geometry["kernel_w"]
    size = out_c * (in_c // group) * kh * kw
    params = dict(num_output=out_c, bias_term=int(bias), weight_data_size=size, group=group,
                  activation_type=activation, **geometry)
    if activation == 2:
        params["activation_params"] = [0.1]
    weights = [rng.standard_normal(size).astype(np.float32)]
    if bias:
        weights.append(rng.standard_normal(out_c).astype(np.float32))
    return ids("DeconvolutionDepthWise", **params), weights


@pytest.mark.parametrize("geometry", DECONV, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
@pytest.mark.parametrize("in_c,group,out_c", GROUPS, ids=str)
def test_deconvolution_depthwise(tmp_path, rng, geometry, in_c, group, out_c):
    params, weights = deconv_dw_case(rng, in_c, out_c, group, activation=2, **geometry)
    x = rng.standard_normal((in_c, 6, 5)).astype(np.float32)
    check(tmp_path, "DeconvolutionDepthWise", params, [x], weights)


@pytest.mark.parametrize("in_c,group,out_c", [(4, 4, 4), (6, 3, 9)], ids=str)
def test_deconvolution_depthwise_without_bias(tmp_path, rng, in_c, group, out_c):
    params, weights = deconv_dw_case(rng, in_c, out_c, group, bias=False, kernel_w=2, stride_w=2)
    check(tmp_path, "DeconvolutionDepthWise", params, [rng.standard_normal((in_c, 7, 3)).astype(np.float32)],
          weights)


def test_deconvolution_depthwise_rejects_ungroupable_channels(rng):
    params, weights = deconv_dw_case(rng, 6, 6, 3, kernel_w=3)
    with pytest.raises(InterpreterError, match="do not split into 3 groups"):
        interpret("DeconvolutionDepthWise", params, [np.zeros((5, 4, 4), np.float32)], weights)

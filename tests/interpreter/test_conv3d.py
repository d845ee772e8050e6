"""Convolution3D against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

GEOMETRY = [
    dict(kernel_w=3),
    dict(kernel_w=1),
    dict(kernel_w=3, kernel_h=2, kernel_d=1),
    dict(kernel_w=2, stride_w=2),
    dict(kernel_w=3, stride_w=1, stride_h=2, stride_d=3),
    dict(kernel_w=2, dilation_w=2, dilation_d=1),
    dict(kernel_w=3, pad_left=1),
    dict(kernel_w=3, pad_left=1, pad_right=0, pad_top=2, pad_bottom=0, pad_front=0, pad_behind=1, pad_value=0.5),
    dict(kernel_w=3, stride_w=2, pad_left=-233),
    dict(kernel_w=4, stride_w=2, pad_left=-234),      # d's odd pixel goes last (see conv3d.py)
    dict(kernel_w=2, pad_left=-234, pad_value=-1.0),
]
label = lambda g: ",".join(f"{k}={v}" for k, v in g.items())  # noqa: E731


def conv3d_case(rng, in_c, out_c, bias=True, activation=0, activation_params=(), **geometry):
    kernel = [geometry.get(f"kernel_{a}", geometry["kernel_w"]) for a in "dhw"]
    size = out_c * in_c * int(np.prod(kernel))
    params = dict(num_output=out_c, bias_term=int(bias), weight_data_size=size, activation_type=activation,
                  **geometry)
    if activation_params:
        params["activation_params"] = list(activation_params)
    weights = [rng.standard_normal(size) / np.sqrt(size / out_c)]
    if bias:
        weights.append(rng.standard_normal(out_c))
    return ids("Convolution3D", **params), weights


@pytest.mark.parametrize("geometry", GEOMETRY, ids=label)
@pytest.mark.parametrize("in_c,out_c", [(2, 3), (8, 4)])
def test_convolution3d_geometry(tmp_path, rng, geometry, in_c, out_c):
    params, weights = conv3d_case(rng, in_c, out_c, **geometry)
    check(tmp_path, "Convolution3D", params, [rng.standard_normal((in_c, 5, 6, 7))], weights)


@pytest.mark.parametrize("activation,activation_params", [(1, ()), (2, (0.1,)), (3, (-0.5, 0.5)), (4, ()),
                                                          (5, ()), (6, (0.2, 0.5))])
def test_convolution3d_fused_activation_without_bias(tmp_path, rng, activation, activation_params):
    params, weights = conv3d_case(rng, 3, 4, bias=False, activation=activation,
                                  activation_params=activation_params, kernel_w=2)
    check(tmp_path, "Convolution3D", params, [rng.standard_normal((3, 4, 5, 5)) * 2], weights)


def test_convolution3d_refusals(rng):
    params, weights = conv3d_case(rng, 2, 2, kernel_w=3, pad_left=1, pad_top=-233)
    with pytest.raises(InterpreterError, match="mix positive and negative"):
        interpret("Convolution3D", params, [np.zeros((2, 4, 4, 4))], weights)
    params, weights = conv3d_case(rng, 2, 2, kernel_w=3)
    with pytest.raises(InterpreterError, match="weight has 108 values"):
        interpret("Convolution3D", params, [np.zeros((3, 4, 4, 4))], weights)

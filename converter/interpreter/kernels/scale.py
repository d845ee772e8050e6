"""ncnn Scale and Bias: per-channel (outermost axis) multiply-add, the scale from the .bin or a second blob."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

SCALE_FROM_INPUT = -233


def by_channel(x: np.ndarray) -> np.ndarray:
    """(channels, values per channel) as ncnn's channel loops see x."""
    return x.reshape(x.shape[0] if x.ndim >= 3 else 1, -1)


def _per_axis0(values: np.ndarray, x: np.ndarray, what: str) -> np.ndarray:
    """values[:x.shape[0]] shaped to broadcast along x's outermost axis."""
    if values.size < x.shape[0]:
        fail(f"{what} has {values.size} values for the {x.shape[0]} rows of input {shape_str(x)}")
    return values[:x.shape[0]].reshape((-1,) + (1,) * (x.ndim - 1))


@kernel("Scale")
def scale(p, weights, x, *scale_blob):
    if p.scale_data_size == SCALE_FROM_INPUT:
        if p.bias_term:
            fail("Scale with scale_data_size -233 and bias_term: ncnn loads no bias and reads an empty one")
        if len(scale_blob) != 1 or scale_blob[0].ndim > 2:
            fail("Scale with scale_data_size -233 needs one 1-D or 2-D scale blob as its second input")
        factors = scale_blob[0].ravel()
    else:
        factors = weights[0]
    out = x * _per_axis0(factors, x, "the scale")
    if p.bias_term and p.scale_data_size != SCALE_FROM_INPUT:
        out += _per_axis0(weights[1], x, "the bias")
    return out


@kernel("Bias")
def bias(p, weights, x):
    rows = by_channel(x)
    if weights[0].size < rows.shape[0]:
        fail(f"Bias has {weights[0].size} values for the {rows.shape[0]} channels of input {shape_str(x)}")
    return (rows + weights[0][:rows.shape[0], None]).reshape(x.shape)



"""Scale, Bias, Normalize, StatisticsPooling and ShuffleChannel: layers that work channel by
channel (scale.cpp, bias.cpp, normalize.cpp, statisticspooling.cpp, shufflechannel.cpp).

ncnn's "channel" is the c axis: a 1-D or 2-D blob is one channel holding everything
(Scale alone indexes its outermost axis, whatever the rank).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32
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


@kernel("ShuffleChannel")
def shuffle_channel(p, weights, x):
    if x.ndim < 3 and (p.group != 1 or p.reverse):
        # ncnn's x86 ShuffleChannel shuffles a 2-D blob's packed rows, and crashes reversing one
        fail(f"ShuffleChannel on input {shape_str(x)}: ncnn shuffles only the c axis of a 3-D or 4-D blob")
    rows = by_channel(x)
    channels = rows.shape[0]
    if p.group < 1 or channels % p.group:
        fail(f"ShuffleChannel group {p.group} does not divide the {channels} channels of input {shape_str(x)}")
    groups = channels // p.group if p.reverse else p.group
    return rows.reshape(groups, channels // groups, -1).transpose(1, 0, 2).reshape(x.shape)


def _inverse_norm(p, square_sum: np.ndarray) -> np.ndarray:
    """1 / the norm, with eps added (caffe), as a floor on the norm (pytorch) or on its square (tf)."""
    eps = F32(p.eps)
    if p.eps_mode == 0:
        return F32(1) / np.sqrt(square_sum + eps)
    if p.eps_mode == 1:
        return F32(1) / np.maximum(np.sqrt(square_sum), eps)
    return F32(1) / np.sqrt(np.maximum(square_sum, eps))


@kernel("Normalize")
def normalize(p, weights, x):
    rows = by_channel(x)
    wanted = 1 if p.channel_shared else rows.shape[0]
    if weights[0].size < wanted:
        fail(f"Normalize has {weights[0].size} scale values for the {rows.shape[0]} channels of {shape_str(x)}")
    factors = weights[0][:1] if p.channel_shared else weights[0][:rows.shape[0]]
    factors = factors[:, None]
    if not p.across_spatial and not p.across_channel:
        return x                                   # ncnn leaves the blob as it is
    squares = rows * rows
    if p.across_spatial and p.across_channel:
        inverse = _inverse_norm(p, squares.sum(axis=1, dtype=F32).sum(dtype=F32))
    elif p.across_spatial:
        inverse = _inverse_norm(p, squares.sum(axis=1, dtype=F32))[:, None]
    else:
        inverse = _inverse_norm(p, squares.sum(axis=0, dtype=F32))[None, :]
    return (rows * (inverse * factors)).reshape(x.shape)


@kernel("StatisticsPooling")
def statistics_pooling(p, weights, x):
    rows = by_channel(x)
    mean = rows.sum(axis=1, dtype=F32) / F32(rows.shape[1])
    if not p.include_stddev:
        return mean
    deviation = rows - mean[:, None]
    return np.concatenate([mean, np.sqrt((deviation * deviation).sum(axis=1, dtype=F32) / F32(rows.shape[1]))])

"""ncnn Normalize: L2 normalization across spatial and/or channel axes, with a scale."""
from __future__ import annotations

import numpy as np

from ..registry import F32, fail, kernel, shape_str
from .scale import by_channel


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



"""InstanceNorm and GroupNorm: mean/variance normalization over channels' whole extents.

ncnn's channel is the outermost axis of a 3-D/4-D blob; GroupNorm also takes
the rows of a 2-D blob and the elements of a 1-D one as channels, while
InstanceNorm sees a 1-D/2-D blob as one channel. Both compute, per group,
a = 1/sqrt(var + eps), b = -mean * a in float32, then the per-channel affine.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32


def _normalize_groups(x: np.ndarray, groups: int, eps: float) -> np.ndarray:
    """x as (groups, rest), each row normalized to mean 0 and variance 1, in x's shape."""
    flat = x.reshape(groups, -1).astype(np.float64)
    mean = flat.mean(axis=1, keepdims=True)
    var = np.square(flat - mean).mean(axis=1, keepdims=True)
    a = 1.0 / np.sqrt(var + F32(eps))
    return ((flat - mean) * a).astype(F32).reshape(x.shape)


def _affine(out: np.ndarray, weights, channels: int) -> np.ndarray:
    gamma, beta = (w.reshape((channels,) + (1,) * (out.ndim - 1)) for w in weights[:2])
    return (out * gamma + beta).astype(F32)


@kernel("InstanceNorm")
def instancenorm(p, weights, x):
    channels = x.shape[0] if x.ndim >= 3 else 1
    if p.affine and p.channels != channels:
        fail(f"InstanceNorm has {p.channels} channels, the input {shape_str(x)} has {channels}")
    out = _normalize_groups(x, channels, p.eps)
    if not p.affine:
        return out
    return _affine(out.reshape((channels, -1)), weights, channels).reshape(x.shape)


@kernel("GroupNorm")
def groupnorm(p, weights, x):
    channels = x.shape[0]
    if p.channels != channels or p.group < 1 or channels % p.group:
        fail(f"GroupNorm of {p.channels} channels in {p.group} groups does not fit input {shape_str(x)}")
    out = _normalize_groups(x, p.group, p.eps)
    return _affine(out, weights, channels) if p.affine else out

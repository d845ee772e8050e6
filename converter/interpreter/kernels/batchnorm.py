"""ncnn BatchNorm: per-channel slope and bias (folded from mean, var, eps at load time)."""
from __future__ import annotations

import numpy as np

from ..buffers import empty
from ..registry import F32, fail, kernel


def _outer(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A per-outermost-axis vector shaped to broadcast against x."""
    return v.reshape((-1,) + (1,) * (x.ndim - 1))


@kernel("BatchNorm", inplace=True)
def batchnorm(p, weights, x, out=None):
    slope, mean, var, bias = (w.astype(F32) for w in weights)
    if x.shape[0] != p.channels:
        fail(f"BatchNorm has {p.channels} channels, input outer extent is {x.shape[0]}")
    sqrt_var = np.sqrt(var + F32(p.eps))
    sqrt_var = np.where(sqrt_var == 0, F32(0.0001), sqrt_var)
    a = bias - slope * mean / sqrt_var
    b = slope / sqrt_var
    out = np.multiply(_outer(b, x), x, out=empty(x.shape) if out is None else out)
    out += _outer(a, x)
    return out



"""LRN (across channels) and PReLU, as the reference ncnn layers compute them."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank

F32 = np.float32


@kernel("LRN")
def lrn(p, weights, x):
    """x * (bias + alpha/size * sum of squares over channels q - size//2 .. q + size//2) ** -beta."""
    require_rank(x, 3)
    if p.region_type != 0:
        fail("LRN within a channel (region_type 1) is not supported by the interpreter")
    half = p.local_size // 2
    squares = np.square(x, dtype=F32)
    padded = np.pad(np.cumsum(squares, axis=0, dtype=np.float64), ((1, 0), (0, 0), (0, 0)))
    c = x.shape[0]
    hi = np.minimum(np.arange(c) + half + 1, c)
    lo = np.maximum(np.arange(c) - half, 0)
    window = (padded[hi] - padded[lo]).astype(F32)
    return x * np.power(F32(p.bias) + F32(p.alpha / p.local_size) * window, F32(-p.beta))


@kernel("PReLU")
def prelu(p, weights, x):
    """Slope per channel of a 3-D blob, per row (h) of a 2-D one, per element of a 1-D one; or one slope."""
    slope = weights[0].astype(F32)
    if p.num_slope > 1:
        if slope.size != x.shape[0]:
            fail(f"PReLU has {slope.size} slopes for an outer extent of {x.shape[0]}")
        slope = slope.reshape((-1,) + (1,) * (x.ndim - 1))
    else:
        slope = slope.reshape(())
    return np.where(x < 0, x * slope, x).astype(F32)

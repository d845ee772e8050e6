"""LRN: local response normalization across channels (region 0) or within each channel (region 1).

ncnn sums the squares over channels q - size/2 .. q + (size - 1)/2, or over a
size x size window padded size/2 before (so an even size reaches one further
back than forward), and scales by alpha / size (alpha / size^2 within a channel):
x * (bias + alpha / n * sum) ^ -beta. It reads only w * h values per
channel, so a 4-D blob is refused.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank

F32 = np.float32
ACROSS_CHANNELS, WITHIN_CHANNEL = 0, 1


def _window_sums(squares: np.ndarray, axis: int, before: int, after: int) -> np.ndarray:
    """Sum of `squares` over [i - before, i + after] along `axis`, zeros outside."""
    pad = [(0, 0)] * squares.ndim
    pad[axis] = (before + 1, after)
    c = np.cumsum(np.pad(squares.astype(np.float64), pad), axis=axis)
    n = squares.shape[axis]
    hi = np.take(c, np.arange(before + 1 + after, before + 1 + after + n), axis=axis)
    lo = np.take(c, np.arange(0, n), axis=axis)
    return hi - lo


@kernel("LRN")
def lrn(p, weights, x):
    require_rank(x, 3)
    size = p.local_size
    if size < 1:
        fail(f"LRN local_size {size} must be positive")
    squares = np.square(x, dtype=F32)
    if p.region_type == ACROSS_CHANNELS:
        # measured on the pip runtime: (size - 1) / 2 channels after, though lrn.cpp reads size / 2
        sums = _window_sums(squares, 0, size // 2, (size - 1) // 2)
        scale = F32(p.alpha) / F32(size)
    elif p.region_type == WITHIN_CHANNEL:
        sums = _window_sums(_window_sums(squares, 1, size // 2, size - size // 2 - 1), 2,
                            size // 2, size - size // 2 - 1)
        scale = F32(p.alpha) / F32(size * size)
    else:
        fail(f"unknown LRN region_type {p.region_type}")
    return (x * np.power(F32(p.bias) + scale * sums.astype(F32), F32(-p.beta))).astype(F32)

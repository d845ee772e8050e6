"""PixelShuffle (depth to space) and Reorg (space to depth) on a (C, H, W) blob.

mode 0 takes channel c * r * r + i * r + j to (or from) pixel (i, j) of
channel c's r x r block; mode 1 takes channel (i * r + j) * C + c. ncnn
floors: PixelShuffle reads only the first C // (r * r) * r * r channels,
Reorg only the first H // r * r rows and W // r * r columns.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank


def _factor(value: int, what: str) -> int:
    if value < 1:
        fail(f"{what} {value} must be positive")
    return value


@kernel("PixelShuffle")
def pixelshuffle(p, weights, x):
    require_rank(x, 3)
    r = _factor(p.upscale_factor, "upscale_factor")
    c, h, w = x.shape
    outc = c // (r * r)
    if outc == 0:
        fail(f"{c} channels are fewer than upscale_factor^2 = {r * r}")
    blocks = x[:outc * r * r].reshape((outc, r, r, h, w) if p.mode == 0 else (r, r, outc, h, w))
    order = (0, 3, 1, 4, 2) if p.mode == 0 else (2, 3, 0, 4, 1)
    return np.ascontiguousarray(blocks.transpose(order)).reshape(outc, h * r, w * r)


@kernel("Reorg")
def reorg(p, weights, x):
    require_rank(x, 3)
    s = _factor(p.stride, "stride")
    c, h, w = x.shape
    oh, ow = h // s, w // s
    if oh == 0 or ow == 0:
        fail(f"stride {s} is larger than the {h}x{w} input")
    cells = x[:, :oh * s, :ow * s].reshape(c, oh, s, ow, s)
    order = (0, 2, 4, 1, 3) if p.mode == 0 else (2, 4, 0, 1, 3)
    return np.ascontiguousarray(cells.transpose(order)).reshape(c * s * s, oh, ow)

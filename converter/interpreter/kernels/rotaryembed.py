"""ncnn RotaryEmbed: rotate pairs of x (heads, seq, dim) by a (seq, dim / 2) cos and sin cache;
pairs are the two halves of each row (interleaved 0) or neighbours (interleaved 1)."""
from __future__ import annotations

import numpy as np

from ..registry import F32, fail, kernel, shape_str


@kernel("RotaryEmbed")
def rotaryembed(p, weights, x, cos, sin):
    if x.ndim != 3 or x.shape[2] % 2:
        fail(f"RotaryEmbed input must be 3-D (heads, seq, dim) with an even dim, got {shape_str(x)}")
    half = x.shape[2] // 2
    if cos.shape != (x.shape[1], half) or sin.shape != cos.shape:
        fail(f"RotaryEmbed caches must be (seq, dim / 2) = ({x.shape[1]}, {half}), got cos {shape_str(cos)}, "
             f"sin {shape_str(sin)}")
    x0, x1 = (x[..., 0::2], x[..., 1::2]) if p.interleaved else (x[..., :half], x[..., half:])
    c, s = cos.astype(F32), sin.astype(F32)
    out = np.empty_like(x, dtype=F32)
    first, second = x0 * c - x1 * s, x0 * s + x1 * c
    if p.interleaved:
        out[..., 0::2], out[..., 1::2] = first, second
    else:
        out[..., :half], out[..., half:] = first, second
    return out

"""RotaryEmbed (rotaryembed.cpp): each head's row i of x rotated by the angles of cos/sin row i.

Non-interleaved (0=0) pairs element j with element j + dim/2; interleaved (0=1) pairs 2j with
2j + 1: out_a = a * cos - b * sin, out_b = a * sin + b * cos. x is (heads, seq, dim) (a 2-D x is
one head); cos and sin are (seq, dim/2).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("RotaryEmbed")
def rotaryembed(p, weights, x, cos, sin):
    x3 = x[None] if x.ndim == 2 else x
    if x3.ndim != 3 or x3.shape[2] % 2:
        fail(f"RotaryEmbed takes (heads, seq, even dim), got {shape_str(x)}")
    seq, half = x3.shape[1], x3.shape[2] // 2
    for table, what in ((cos, "cos"), (sin, "sin")):
        if table.ndim != 2 or table.shape[0] < seq or table.shape[1] < half:
            fail(f"RotaryEmbed {what} of {shape_str(table)} does not cover {seq} rows of {half}")
    c, s = cos[:seq, :half].astype(np.float32), sin[:seq, :half].astype(np.float32)
    if p.interleaved:
        a, b = x3[..., 0::2], x3[..., 1::2]
    else:
        a, b = x3[..., :half], x3[..., half:]
    ra, rb = a * c - b * s, a * s + b * c
    out = np.empty_like(x3)
    if p.interleaved:
        out[..., 0::2], out[..., 1::2] = ra, rb
    else:
        out[..., :half], out[..., half:] = ra, rb
    return out.reshape(x.shape)

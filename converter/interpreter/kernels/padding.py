"""ncnn Padding: constant, replicate or reflect pads on w/h/d/c."""
from __future__ import annotations

import numpy as np

from ..registry import F32, fail, kernel


@kernel("Padding")
def padding(p, weights, x):
    pads = [(p.top, p.bottom), (p.left, p.right)]
    if x.ndim == 1:
        pads = pads[1:]
    elif x.ndim == 3:
        pads = [(p.front, p.behind)] + pads
    elif x.ndim == 4:
        pads = [(0, 0), (p.front, p.behind)] + pads
    if min(v for pair in pads for v in pair) < 0:
        fail(f"negative Padding {pads} is not supported by the interpreter")
    if not any(v for pair in pads for v in pair):
        return x
    if p.type == 0:
        out = np.pad(x, pads, constant_values=F32(p.value))
        if p.per_channel_pad_data_size and x.ndim >= 3:
            values = weights[0].astype(F32)
            if values.size < out.shape[0]:
                fail(f"{values.size} per-channel pad values for {out.shape[0]} channels")
            inner = np.zeros(out.shape, dtype=bool)
            inner[tuple(slice(a, a + n) for (a, _), n in zip(pads, x.shape))] = True
            out = np.where(inner, out, values[:out.shape[0]].reshape((-1,) + (1,) * (x.ndim - 1)))
        return out
    if p.type == 1:
        return np.pad(x, pads, mode="edge")
    if p.type == 2:
        for (before, after), n in zip(pads, x.shape):
            if max(before, after) >= n:
                fail(f"reflect padding of {max(before, after)} needs an extent above it, got {n}")
        return np.pad(x, pads, mode="reflect")
    fail(f"unknown Padding type {p.type}")



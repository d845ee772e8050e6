"""Pooling1D: the 2-D Pooling on a (channels, 1, length) view; pooling1d.cpp is pooling.cpp
with the h axis dropped (same pad modes, tail pad and averaging area)."""
from __future__ import annotations

from ..registry import fail, kernel
from .convolution1d import as_2d, as_image
from .pooling import pooling


@kernel("Pooling1D", prepare=True)
def pooling1d(p, weights):
    if p.adaptive_pooling and not p.global_pooling and p.out_w <= 0:
        fail(f"adaptive Pooling1D needs out_w > 0, got {p.out_w}; ncnn refuses to load it")
    if not (p.global_pooling or p.adaptive_pooling) and min(p.pad_left, p.pad_right) < 0:
        fail(f"Pooling1D pads {p.pad_left},{p.pad_right}: ncnn crops the input for a negative pad")
    step2d = pooling(as_2d(p, pad_top=0, pad_bottom=0, out_h=1), weights)

    def step(x):
        out = step2d(as_image(x))
        return out if p.global_pooling else out[:, 0, :]
    return step

"""Unfold (im2col) and Fold (col2im, summing overlaps): unfold.cpp, fold.cpp.

Unfold: (c, h, w) -> (c * kh * kw, outh * outw), row p * kh * kw + u * kw + v holding tap (u, v)
of channel p. Fold reverses it into (c, output_h, output_w), adding taps in the same order.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank, shape_str

SAME_UPPER, SAME_LOWER = -233, -234


def _extent(kernel_size: int, dilation: int) -> int:
    return dilation * (kernel_size - 1) + 1


def _positions(p) -> list[tuple[int, int]]:
    """The (row, column) offset of every kernel tap, in ncnn's order."""
    return [(p.dilation_h * u, p.dilation_w * v) for u in range(p.kernel_h) for v in range(p.kernel_w)]


def _unfold_pads(p, h: int, w: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) as Unfold::make_padding picks them."""
    pads = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right)
    if any(v > 0 for v in pads):
        if any(v < 0 for v in pads):
            fail(f"Unfold pads {pads} mix positive and negative values")
        return pads
    if len(set(pads)) == 1 and pads[0] in (SAME_UPPER, SAME_LOWER):
        wpad = max(0, _extent(p.kernel_w, p.dilation_w) + (w - 1) // p.stride_w * p.stride_w - w)
        hpad = max(0, _extent(p.kernel_h, p.dilation_h) + (h - 1) // p.stride_h * p.stride_h - h)
        if pads[0] == SAME_UPPER:
            return hpad // 2, hpad - hpad // 2, wpad // 2, wpad - wpad // 2
        return hpad - hpad // 2, hpad // 2, wpad - wpad // 2, wpad // 2
    return 0, 0, 0, 0                  # ncnn ignores other non-positive pads


@kernel("Unfold")
def unfold(p, weights, x):
    require_rank(x, 3)
    top, bottom, left, right = _unfold_pads(p, x.shape[1], x.shape[2])
    x = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=np.float32(p.pad_value))
    c, h, w = x.shape
    outh = (h - _extent(p.kernel_h, p.dilation_h)) // p.stride_h + 1
    outw = (w - _extent(p.kernel_w, p.dilation_w)) // p.stride_w + 1
    if p.kernel_w < 1 or p.kernel_h < 1 or outh < 1 or outw < 1:
        fail(f"Unfold kernel {p.kernel_h}x{p.kernel_w} does not fit the padded input {shape_str(x)}")
    taps = [x[:, dy:dy + p.stride_h * (outh - 1) + 1:p.stride_h, dx:dx + p.stride_w * (outw - 1) + 1:p.stride_w]
            for dy, dx in _positions(p)]
    return np.stack(taps, axis=1).reshape(c * len(taps), outh * outw)


@kernel("Fold")
def fold(p, weights, x):
    require_rank(x, 2)
    pads = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right)
    if any(v < 0 for v in pads) or p.kernel_w < 1 or p.kernel_h < 1:
        fail(f"Fold kernel {p.kernel_h}x{p.kernel_w} with pads {pads}: ncnn folds only positive kernels "
             f"and non-negative pads")
    outh, outw = p.output_h + p.pad_top + p.pad_bottom, p.output_w + p.pad_left + p.pad_right
    inh = (outh - _extent(p.kernel_h, p.dilation_h)) // p.stride_h + 1
    inw = (outw - _extent(p.kernel_w, p.dilation_w)) // p.stride_w + 1
    maxk = p.kernel_h * p.kernel_w
    channels = x.shape[0] // maxk       # ncnn ignores rows past a whole number of channels
    if inh < 1 or inw < 1 or x.shape[1] != inh * inw or channels < 1:
        fail(f"Fold input {shape_str(x)} does not hold {maxk} taps x {max(inh, 0)}x{max(inw, 0)} "
             f"positions for a {p.output_h}x{p.output_w} output")
    cols = x[:channels * maxk].reshape(channels, maxk, inh, inw)
    out = np.zeros((channels, outh, outw), np.float32)
    for k, (dy, dx) in enumerate(_positions(p)):
        out[:, dy:dy + p.stride_h * (inh - 1) + 1:p.stride_h, dx:dx + p.stride_w * (inw - 1) + 1:p.stride_w] += cols[:, k]
    return out[:, p.pad_top:outh - p.pad_bottom, p.pad_left:outw - p.pad_right].copy()

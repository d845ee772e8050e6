"""Pooling: max/avg over windows (4 pad modes), global and adaptive."""
from __future__ import annotations

import numpy as np

from ..buffers import empty, recycle
from ..registry import fail, kernel, require_rank
from .convolution import output_extent, pad_hw, same_pads, window_slices

F32 = np.float32
MAX, AVG = 0, 1
FLT_MAX = F32(np.finfo(np.float32).max)


def _pads(p, h: int, w: int) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """Border (top, bottom, left, right) ncnn adds, and the tail part of it (bottom, right)
    that pad_mode 0 adds so the last partial window is kept."""
    kh, kw, sh, sw = p.kernel_h, p.kernel_w, p.stride_h, p.stride_w
    if p.pad_mode == 0:   # full: keep the tail window
        htail = (h + p.pad_top + p.pad_bottom - kh) % sh
        wtail = (w + p.pad_left + p.pad_right - kw) % sw
        htail, wtail = (sh - htail if htail else 0), (sw - wtail if wtail else 0)
        return (p.pad_top, p.pad_bottom + htail, p.pad_left, p.pad_right + wtail), (htail, wtail)
    if p.pad_mode == 1:   # valid
        return (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right), (0, 0)
    if p.pad_mode in (2, 3):   # SAME_UPPER / SAME_LOWER
        top, bottom = same_pads(h, kh, sh, p.pad_mode == 3)
        left, right = same_pads(w, kw, sw, p.pad_mode == 3)
        return (top, bottom, left, right), (0, 0)
    fail(f"unknown pad_mode {p.pad_mode}")


def _adaptive(p, x: np.ndarray) -> np.ndarray:
    _, h, w = x.shape
    out_h = h if p.out_h == -233 else p.out_h
    out_w = w if p.out_w == -233 else p.out_w
    if (out_h, out_w) == (h, w):
        return x

    def bins(size, out):
        i = np.arange(out)
        start, end = size * i // out, (size * (i + 1) + out - 1) // out
        k = int((end - start).max())
        idx = start[:, None] + np.arange(k)
        return np.minimum(idx, size - 1), idx < end[:, None], end - start

    hi, hmask, hcount = bins(h, out_h)
    wi, wmask, wcount = bins(w, out_w)
    g = x[:, hi][:, :, :, wi]                       # C, outh, kh, outw, kw
    mask = hmask[:, :, None, None] & wmask[None, None]
    if p.pooling_type == MAX:
        return np.where(mask, g, -np.inf).max(axis=(2, 4)).astype(F32)
    total = np.where(mask, g, F32(0)).sum(axis=(2, 4), dtype=F32)
    return total / F32(hcount)[:, None] / F32(wcount)[None, :]


@kernel("Pooling", prepare=True)
def pooling(p, weights):
    if p.pooling_type not in (MAX, AVG):
        fail(f"unknown pooling_type {p.pooling_type}")
    border = -FLT_MAX if p.pooling_type == MAX else F32(0)
    geometries: dict[tuple, tuple] = {}     # input shape -> (pads, region, divisor), worked out once

    def step(x):
        require_rank(x, 3)
        if p.global_pooling:
            flat = x.reshape(x.shape[0], -1)
            return flat.max(axis=1) if p.pooling_type == MAX else flat.sum(axis=1) / F32(flat.shape[1])
        if p.adaptive_pooling:
            return _adaptive(p, x)
        shape = geometries.get(x.shape)
        if shape is None:
            shape = geometries[x.shape] = _geometry(p, x.shape)
        pads, region, divisor = shape
        xp = pad_hw(x, *pads, border)
        if region is not None:        # ncnn leaves the param pads out of sums, data or not
            xp = np.multiply(xp, region, out=xp if xp is not x else empty(xp.shape))
        out = _max_windows(xp, p) if p.pooling_type == MAX else _sum_windows(xp, p)
        if xp is not x:
            recycle(xp)
        if divisor is not None:
            np.divide(out, divisor, out=out)
        return out
    return step


def _geometry(p, shape: tuple) -> tuple:
    """The border to add; for average pooling the 0/1 mask of what the sums count (None: all)
    and what each window's sum is divided by."""
    _, h, w = shape
    (top, bottom, left, right), (htail, wtail) = _pads(p, h, w)
    if p.pooling_type == MAX:
        return (top, bottom, left, right), None, None
    if p.avgpool_count_include_pad:
        return (top, bottom, left, right), None, F32(p.kernel_h * p.kernel_w)
    # ncnn excludes only the pad given by the params (plus pad_mode 0's tail), so
    # SAME pads (modes 2/3) still count as area when the param pads are 0
    hb, wb = h + top + bottom, w + left + right
    rows = (np.arange(hb) >= p.pad_top) & (np.arange(hb) < hb - p.pad_bottom - htail)
    cols = (np.arange(wb) >= p.pad_left) & (np.arange(wb) < wb - p.pad_right - wtail)
    region = (rows[:, None] & cols[None, :]).astype(F32)[None]
    return (top, bottom, left, right), region, _sum_windows(region, p).copy()


def _max_windows(x: np.ndarray, p) -> np.ndarray:
    """The max of every kernel window, along w then along h: kw + kh whole-array ops
    instead of kw * kh, and exact (the max does not depend on the order)."""
    kh, kw, sh, sw = p.kernel_h, p.kernel_w, p.stride_h, p.stride_w
    oh, ow = output_extent(x.shape[1], kh, sh), output_extent(x.shape[2], kw, sw)
    rows = empty((x.shape[0], x.shape[1], ow))
    np.copyto(rows, x[:, :, :(ow - 1) * sw + 1:sw])
    for j in range(1, kw):
        np.maximum(rows, x[:, :, j:j + (ow - 1) * sw + 1:sw], out=rows)
    out = empty((x.shape[0], oh, ow))
    np.copyto(out, rows[:, :(oh - 1) * sh + 1:sh])
    for i in range(1, kh):
        np.maximum(out, rows[:, i:i + (oh - 1) * sh + 1:sh], out=out)
    recycle(rows)
    return out


def _sum_windows(x: np.ndarray, p) -> np.ndarray:
    """The sum of every kernel window, one whole-array add per kernel tap in ncnn's order
    (row by row), so the float rounding follows ncnn's."""
    out = None
    for _, _, tap in window_slices(x, p.kernel_h, p.kernel_w, p.stride_h, p.stride_w):
        if out is None:
            out = empty(tap.shape)
            np.copyto(out, tap)
        else:
            np.add(out, tap, out=out)
    return out

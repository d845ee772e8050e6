"""Pooling3D: max/avg over (d, h, w) windows (4 pad modes), global and adaptive; pooling3d.cpp
is pooling.cpp with a d axis added (same tail pad and averaging area)."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank
from .convolution3d import FLT_MAX, pad_3d, param_pads, per_axis, same_pads_3d, windows

F32 = np.float32
MAX, AVG = 0, 1


def _pads(p, sizes):
    """Border per axis, and the tail part of it (pad_mode 0) that the average leaves out."""
    kernel_, stride, given = per_axis(p, "kernel"), per_axis(p, "stride"), param_pads(p)
    if p.pad_mode == 0:        # full: keep the last partial window
        tails = [(n + a + b - k) % s for n, (a, b), k, s in zip(sizes, given, kernel_, stride)]
        tails = [s - t if t else 0 for t, s in zip(tails, stride)]
        return tuple((a, b + t) for (a, b), t in zip(given, tails)), tails
    if p.pad_mode == 1:
        return given, [0, 0, 0]
    if p.pad_mode in (2, 3):
        return same_pads_3d(sizes, kernel_, stride, p.pad_mode == 3), [0, 0, 0]
    fail(f"unknown pad_mode {p.pad_mode}")


def _adaptive(p, x: np.ndarray) -> np.ndarray:
    sizes = x.shape[1:]
    outs = [n if o == -233 else o for n, o in zip(sizes, per_axis(p, "out"))]
    if tuple(outs) == sizes:
        return x
    if min(outs) <= 0:
        fail(f"adaptive Pooling3D output {outs} is empty")
    reduce = np.max if p.pooling_type == MAX else np.mean
    result = x
    for axis, (n, o) in enumerate(zip(sizes, outs), start=1):    # bins are separable per axis
        i = np.arange(o)
        starts, ends = n * i // o, (n * (i + 1) + o - 1) // o
        result = np.stack([reduce(np.take(result, range(s, e), axis=axis), axis=axis)
                           for s, e in zip(starts, ends)], axis=axis).astype(F32)
    return result


def _window_reduce(view: np.ndarray, pooling_type: int) -> np.ndarray:
    taps = view.reshape(view.shape[0], -1, *view.shape[4:])
    return taps.max(axis=1) if pooling_type == MAX else taps.sum(axis=1, dtype=F32)


@kernel("Pooling3D")
def pooling3d(p, weights, x):
    require_rank(x, 4)
    if p.pooling_type not in (MAX, AVG):
        fail(f"unknown pooling_type {p.pooling_type}")
    if p.global_pooling:
        flat = x.reshape(x.shape[0], -1)
        return flat.max(axis=1) if p.pooling_type == MAX else flat.sum(axis=1, dtype=F32) / F32(flat.shape[1])
    if p.adaptive_pooling:
        return _adaptive(p, x)
    kernel_, stride = per_axis(p, "kernel"), per_axis(p, "stride")
    pads, tails = _pads(p, x.shape[1:])
    border = -FLT_MAX if p.pooling_type == MAX else F32(0)
    out = _window_reduce(windows(pad_3d(x, pads, border), kernel_, stride), p.pooling_type)
    if p.pooling_type == MAX:
        return out
    if p.avgpool_count_include_pad:
        return out / F32(np.prod(kernel_))
    # the area counts all but the param pads (and pad_mode 0's tail), like the 2-D layer
    masks = [((np.arange(n + a + b) >= g0) & (np.arange(n + a + b) < n + a + b - g1 - t)).astype(F32)
             for n, (a, b), (g0, g1), t in zip(x.shape[1:], pads, param_pads(p), tails)]
    region = (masks[0][:, None, None] * masks[1][None, :, None] * masks[2][None, None, :])[None]
    area = _window_reduce(windows(region, kernel_, stride), AVG)
    return out / area

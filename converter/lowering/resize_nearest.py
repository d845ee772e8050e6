"""Nearest Resize through an Interp scale chosen for its pixels, not copied from ONNX.

ncnn's nearest Interp takes output pixel x from source min(int(x * step), size - 1), with
step = 1 / width_scale and output extent int(size * width_scale). ONNX's nearest modes
(half_pixel with floor or ceil rounding, align_corners, ...) pick other sources than
step = 1 / scale, but at a known extent the picked indices often still are
min(int(x * step), size - 1) for some other step: every output pixel bounds the step to an
interval, and so does the output extent. Any step in the intersection reproduces
onnxruntime exactly; candidates are checked with ncnn's own float32 arithmetic.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.interp_sampling import nearest_sources as ncnn_nearest
from converter.onnx_side.resize import F32, Unmodelled
from converter.onnx_side.resize import nearest_sources as onnx_nearest


def fitted_nearest_params(mode, wh) -> dict | None:
    """Interp params (nearest, a fitted scale per resized axis) giving onnxruntime's source
    pixels on every resized axis of known extent, or None."""
    params = {0: 1}
    for ax, pid in zip(wh, (1, 2)):
        if ax is None or not ax.touched:
            continue
        if ax.size is None or ax.out is None or ax.out <= 0:
            return None
        onnx_scale = ax.scale if ax.scale is not None else F32(ax.out) / F32(ax.size)
        try:
            want = onnx_nearest(mode, ax.size, ax.out, onnx_scale)
        except Unmodelled:
            return None
        scale = _fit(ax.size, ax.out, want)
        if scale is None:
            return None
        params[pid] = scale
    return params


def _fit(size: int, out: int, want: np.ndarray) -> float | None:
    lo, hi = _step_interval(size, out, want)
    if lo > hi:
        return None
    # inside the interval, then its ends (one end may be closed); each checked exactly
    for step in [lo + t * (hi - lo) for t in (0.5, 0.25, 0.75, 0.1, 0.9)] + [lo, hi]:
        scale = float(F32(1) / F32(step))
        if int(F32(size) * F32(scale)) == out and np.array_equal(ncnn_nearest(size, out, False, scale), want):
            return scale
    return None


def _step_interval(size: int, out: int, want: np.ndarray) -> tuple[float, float]:
    """Bounds of the steps with int(x * step) == want[x] (or >= size - 1 where clamped) and an
    output extent of `out` (scale in [out/size, (out+1)/size)); float rounding at the ends is
    left to the exact check."""
    lo, hi = size / (out + 1), size / out
    if want[0] != 0 and size > 1:
        return 1.0, 0.0
    for x in range(1, out):
        t = int(want[x])
        lo = max(lo, t / x)
        if t < size - 1:
            hi = min(hi, (t + 1) / x)
    return lo, hi

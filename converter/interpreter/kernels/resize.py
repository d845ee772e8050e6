"""Interp: nearest, bilinear and bicubic resize with ncnn's coordinate rules."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank

F32 = np.float32
NEAREST, BILINEAR, BICUBIC = 1, 2, 3


def _source_coords(size: int, out: int, align_corner: bool, step: float) -> tuple[np.ndarray, np.ndarray]:
    """ncnn's float source coordinate of every output pixel: integer part and fraction."""
    dx = np.arange(out, dtype=np.float64)
    if align_corner and out == 1:
        fail("align_corner with an output extent of 1 divides by zero in ncnn")
    if align_corner:
        fx = (dx * ((size - 1) / (out - 1))).astype(F32)
    else:
        fx = ((dx + 0.5) * step - 0.5).astype(F32)
    sx = np.floor(fx).astype(np.int64)
    return sx, (fx - sx).astype(F32)


def _linear_taps(size: int, out: int, align_corner: bool, step: float) -> tuple[np.ndarray, np.ndarray]:
    """(out, 2) source indices and weights; edges clamp like ncnn's linear_coeffs."""
    sx, fx = _source_coords(size, out, align_corner, step)
    low, high = sx < 0, sx >= size - 1
    sx = np.where(low, 0, np.where(high, size - 2, sx))
    fx = np.where(low, F32(0), np.where(high, F32(1), fx))
    return sx[:, None] + np.arange(2), np.stack([F32(1) - fx, fx], axis=1)


def _cubic_weights(fx: np.ndarray) -> np.ndarray:
    a = F32(-0.75)
    f0, f1, f2 = fx + F32(1), fx, F32(1) - fx
    c0 = a * f0 * f0 * f0 - 5 * a * f0 * f0 + 8 * a * f0 - 4 * a
    c1 = (a + 2) * f1 * f1 * f1 - (a + 3) * f1 * f1 + 1
    c2 = (a + 2) * f2 * f2 * f2 - (a + 3) * f2 * f2 + 1
    return np.stack([c0, c1, c2, F32(1) - c0 - c1 - c2], axis=1).astype(F32)


def _cubic_taps(size: int, out: int, align_corner: bool, step: float) -> tuple[np.ndarray, np.ndarray]:
    """(out, 4) source indices sx-1..sx+2 and weights; edge taps folded inward like ncnn."""
    sx, fx = _source_coords(size, out, align_corner, step)
    c = _cubic_weights(fx)
    z = np.zeros_like(fx)
    # ncnn's four edge rules, applied in its order to the (sx, coeffs) of each pixel
    rules = [
        (lambda s: s <= -1, 1, lambda c: [1 - c[3], c[3], z, z]),
        (lambda s: s == 0, 1, lambda c: [c[0] + c[1], c[2], c[3], z]),
        (lambda s: s == size - 2, size - 3, lambda c: [z, c[0], c[1], c[2] + c[3]]),
        (lambda s: s >= size - 1, size - 3, lambda c: [z, z, c[0], 1 - c[0]]),
    ]
    for test, new_sx, fold in rules:
        hit = test(sx)
        cols = [c[:, k] for k in range(4)]
        c = np.where(hit[:, None], np.stack(fold(cols), axis=1), c).astype(F32)
        sx = np.where(hit, new_sx, sx)
    return sx[:, None] + np.arange(-1, 3), c


def _resample(x: np.ndarray, axis: int, idx: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """Weighted sum over taps along one axis; taps outside the blob must weigh 0 (ncnn reads
    memory next to the row there, which only works because the weight is 0)."""
    size = x.shape[axis]
    outside = (idx < 0) | (idx >= size)
    if np.any(outside & (wts != 0)):
        fail(f"an extent of {size} is too small for this resize; ncnn would read outside the blob")
    taken = np.take(x, np.clip(idx, 0, size - 1), axis=axis)        # axis -> (out, taps)
    shape = [1] * taken.ndim
    shape[axis], shape[axis + 1] = wts.shape
    return (taken * wts.reshape(shape)).sum(axis=axis + 1, dtype=F32)


def _nearest(x: np.ndarray, axis: int, out: int, step: F32) -> np.ndarray:
    size = x.shape[axis]
    src = np.minimum((np.arange(out, dtype=F32) * step).astype(np.int64), size - 1)
    return np.take(x, src, axis=axis)


def _resize_axis(p, x: np.ndarray, axis: int, out: int, sized: bool, scale: float) -> np.ndarray:
    """Resize one axis. The runtime steps through the source by size/out when the output
    size was given (a size param or a reference blob), else by 1/scale."""
    size = x.shape[axis]
    if p.resize_type == NEAREST:       # float arithmetic
        return _nearest(x, axis, out, F32(size) / F32(out) if sized else F32(1) / F32(scale))
    step = size / out if sized else 1.0 / float(F32(scale))      # double arithmetic
    taps = _linear_taps if p.resize_type == BILINEAR else _cubic_taps
    idx, wts = taps(size, out, bool(p.align_corner), step)
    return _resample(x, axis, idx, wts)


@kernel("Interp")
def interp(p, weights, x, reference=None):
    require_rank(x, 1, 2, 3)
    if p.resize_type not in (NEAREST, BILINEAR, BICUBIC):
        fail(f"unsupported resize_type {p.resize_type}")
    if p.size_expr:
        fail("Interp size expressions are not supported by the interpreter")
    h, w = (1, 1) if x.ndim == 1 else x.shape[-2:] if x.ndim == 3 else (x.shape[0], x.shape[1])
    if reference is not None:
        out_h = 1 if reference.ndim < 2 else reference.shape[-2]
        out_w = reference.shape[-1]
    elif p.output_width and p.output_height:
        out_h, out_w = p.output_height, p.output_width
    else:
        out_h, out_w = int(F32(h) * F32(p.height_scale)), int(F32(w) * F32(p.width_scale))
    if out_h <= 0 or out_w <= 0:
        fail(f"Interp output size {out_h}x{out_w} is empty")
    if x.ndim == 1:          # a flattened blob: each value becomes a filled channel
        return np.broadcast_to(x[:, None, None], (x.shape[0], out_h, out_w)).copy()
    sized_w = bool(p.output_width) or reference is not None
    sized_h = bool(p.output_height) or reference is not None
    if x.ndim == 2:          # 2-D: resize along w only
        if out_w == x.shape[1]:
            return x
        return _resize_axis(p, x, 1, out_w, sized_w, p.width_scale)
    if (out_h, out_w) == x.shape[1:]:
        return x
    # ncnn interpolates each row along w first, then blends rows along h
    y = _resize_axis(p, x, 2, out_w, sized_w, p.width_scale)
    return _resize_axis(p, y, 1, out_h, sized_h, p.height_scale)

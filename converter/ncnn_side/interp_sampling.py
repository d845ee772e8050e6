"""ncnn Interp's sampling along one axis: which source pixels, with which weights.

Nearest steps by size/out (or 1/scale), bilinear and bicubic place output x at
(x + 0.5) * size/out - 0.5 (align_corner: x * (size-1)/(out-1)), bicubic with
a = -0.75 and clamped taps, as interp.cpp computes them. The interpreter's
Interp kernel runs these; the Resize lowering compares them with ONNX's to
decide whether ncnn reproduces a resize.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32

NEAREST, BILINEAR, BICUBIC = 1, 2, 3


def _source_coords(size: int, out: int, align_corner: bool, step: float) -> tuple[np.ndarray, np.ndarray]:
    """ncnn's float source coordinate of every output pixel: integer part and fraction."""
    dx = np.arange(out, dtype=np.float64)
    if align_corner and out == 1:
        raise ValueError("align_corner with an output extent of 1 divides by zero in ncnn")
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


def resample(x: np.ndarray, axis: int, idx: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """Weighted sum over taps along one axis; taps outside the blob must weigh 0 (ncnn reads
    memory next to the row there, which only works because the weight is 0)."""
    size = x.shape[axis]
    outside = (idx < 0) | (idx >= size)
    if np.any(outside & (wts != 0)):
        raise ValueError(f"an extent of {size} is too small for this resize; ncnn would read outside the blob")
    taken = np.take(x, np.clip(idx, 0, size - 1), axis=axis)        # axis -> (out, taps)
    shape = [1] * taken.ndim
    shape[axis], shape[axis + 1] = wts.shape
    return (taken * wts.reshape(shape)).sum(axis=axis + 1, dtype=F32)


def take_nearest(x: np.ndarray, axis: int, out: int, step: F32) -> np.ndarray:
    size = x.shape[axis]
    src = np.minimum((np.arange(out, dtype=F32) * step).astype(np.int64), size - 1)
    return np.take(x, src, axis=axis)


def nearest_step(size: int, out: int, sized: bool, scale: float) -> F32:
    return F32(size) / F32(out) if sized else F32(1) / F32(scale)      # float arithmetic


def taps(resize_type: int, size: int, out: int, align_corner: bool, sized: bool, scale: float):
    """Bilinear/bicubic source taps and weights. The runtime steps through the source by
    size/out when the output size was given (a size param, an expression or a reference
    blob), else by 1/scale."""
    step = size / out if sized else 1.0 / float(F32(scale))      # double arithmetic
    taps = _linear_taps if resize_type == BILINEAR else _cubic_taps
    return taps(size, out, align_corner, step)


def nearest_sources(size: int, out: int, sized: bool, scale: float) -> np.ndarray:
    """The source index of each output position of ncnn's nearest Interp along one axis."""
    step = nearest_step(size, out, sized, scale)
    return np.minimum((np.arange(out).astype(F32) * step).astype(np.int64), size - 1)


def axis_matrix(resize_type: int, size: int, out: int, align_corner: bool, sized: bool,
                scale: float) -> np.ndarray | None:
    """The (out, size) matrix ncnn's Interp applies along one axis, or None where ncnn would
    read outside the blob or divide by zero. `sized`: the output size came from a size param,
    an expression or a reference blob (nearest then steps by size/out, else by 1/scale)."""
    rows = np.arange(out)
    matrix = np.zeros((out, size))
    if resize_type == NEAREST:
        matrix[rows, nearest_sources(size, out, sized, scale)] = 1
        return matrix
    if align_corner and out == 1:
        return None
    idx, wts = taps(resize_type, size, out, align_corner, sized, scale)
    inside = (idx >= 0) & (idx < size)
    if np.any(~inside & (wts != 0)):
        return None
    np.add.at(matrix, (np.broadcast_to(rows[:, None], idx.shape)[inside], idx[inside]), wts[inside])
    return matrix

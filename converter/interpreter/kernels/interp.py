"""Interp: nearest, bilinear and bicubic resize with ncnn's coordinate rules."""
from __future__ import annotations

import numpy as np

from ...expression import ExpressionError, count_blobs, evaluate
from ..registry import extents, fail, kernel, require_rank

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


def _nearest_step(size: int, out: int, sized: bool, scale: float) -> F32:
    return F32(size) / F32(out) if sized else F32(1) / F32(scale)      # float arithmetic


def _taps(resize_type: int, size: int, out: int, align_corner: bool, sized: bool, scale: float):
    """Bilinear/bicubic source taps and weights. The runtime steps through the source by
    size/out when the output size was given (a size param, an expression or a reference
    blob), else by 1/scale."""
    step = size / out if sized else 1.0 / float(F32(scale))      # double arithmetic
    taps = _linear_taps if resize_type == BILINEAR else _cubic_taps
    return taps(size, out, align_corner, step)


def _resize_axis(p, x: np.ndarray, axis: int, out: int, sized: bool, scale: float) -> np.ndarray:
    size = x.shape[axis]
    if p.resize_type == NEAREST:
        return _nearest(x, axis, out, _nearest_step(size, out, sized, scale))
    idx, wts = _taps(p.resize_type, size, out, bool(p.align_corner), sized, scale)
    return _resample(x, axis, idx, wts)


def nearest_sources(size: int, out: int, sized: bool, scale: float) -> np.ndarray:
    """The source index of each output position of ncnn's nearest Interp along one axis."""
    step = _nearest_step(size, out, sized, scale)
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
    idx, wts = _taps(resize_type, size, out, align_corner, sized, scale)
    inside = (idx >= 0) & (idx < size)
    if np.any(~inside & (wts != 0)):
        return None
    np.add.at(matrix, (np.broadcast_to(rows[:, None], idx.shape)[inside], idx[inside]), wts[inside])
    return matrix


def _output_size(p, x: np.ndarray, references: tuple) -> tuple[int, int, bool, bool]:
    """(out_h, out_w, sized_h, sized_w) as ncnn works them out."""
    ext = extents(x)
    h, w = (1, 1) if x.ndim == 1 else (ext["h"], ext["w"])
    reference = references[0] if references else None
    if p.size_expr:
        # evaluated on the shapes of all bottom blobs: [outw] (outh = the input's h) or [outw, outh]
        shapes = [x.shape] + [r.shape for r in references]
        try:
            sizes = evaluate(p.size_expr, shapes)
        except ExpressionError as exc:
            fail(f"Interp size_expr: {exc}")
        if len(sizes) not in (1, 2):
            fail(f"Interp size_expr {p.size_expr!r} gives {len(sizes)} sizes; ncnn takes 1 or 2")
        return (sizes[1] if len(sizes) == 2 else ext["h"]), sizes[0], True, True
    if reference is not None:
        return (1 if reference.ndim < 2 else reference.shape[-2]), reference.shape[-1], True, True
    if p.output_width and p.output_height:
        return p.output_height, p.output_width, True, True
    sized_h, sized_w = bool(p.output_height), bool(p.output_width)
    return int(F32(h) * F32(p.height_scale)), int(F32(w) * F32(p.width_scale)), sized_h, sized_w


@kernel("Interp")
def interp(p, weights, x, *references):
    require_rank(x, 1, 2, 3)
    reference = references[0] if references else None
    if p.resize_type not in (NEAREST, BILINEAR, BICUBIC):
        fail(f"unsupported resize_type {p.resize_type}")
    if reference is not None and not p.dynamic_target_size and count_blobs(p.size_expr) <= 1:
        fail("Interp reads only its first blob, but has more inputs: the real ncnn refuses to load "
             "it (invalid bottom_count for one_blob_only layer)")
    out_h, out_w, sized_h, sized_w = _output_size(p, x, references)
    if out_h <= 0 or out_w <= 0:
        fail(f"Interp output size {out_h}x{out_w} is empty")
    if x.ndim == 1:          # a flattened blob: each value becomes a filled channel
        return np.broadcast_to(x[:, None, None], (x.shape[0], out_h, out_w)).copy()
    if x.ndim == 2:          # 2-D: resize along w only
        if out_w == x.shape[1]:
            return x
        return _resize_axis(p, x, 1, out_w, sized_w, p.width_scale)
    if (out_h, out_w) == x.shape[1:]:
        return x
    # ncnn interpolates each row along w first, then blends rows along h
    y = _resize_axis(p, x, 2, out_w, sized_w, p.width_scale)
    return _resize_axis(p, y, 1, out_h, sized_h, p.height_scale)

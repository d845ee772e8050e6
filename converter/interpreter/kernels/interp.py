"""Interp: nearest, bilinear and bicubic resize with ncnn's coordinate rules."""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import ExpressionError, count_blobs, evaluate
from converter.ncnn_side.interp_sampling import (
    BICUBIC,
    BILINEAR,
    F32,
    NEAREST,
    nearest_step,
    resample,
    take_nearest,
    taps,
)

from ..registry import extents, fail, kernel, require_rank


def _resize_axis(p, x: np.ndarray, axis: int, out: int, sized: bool, scale: float) -> np.ndarray:
    size = x.shape[axis]
    if p.resize_type == NEAREST:
        return take_nearest(x, axis, out, nearest_step(size, out, sized, scale))
    try:
        idx, wts = taps(p.resize_type, size, out, bool(p.align_corner), sized, scale)
        return resample(x, axis, idx, wts)
    except ValueError as exc:
        fail(str(exc))


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

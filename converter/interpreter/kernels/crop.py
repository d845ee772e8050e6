"""ncnn Crop: by offsets, by a reference blob, by starts/ends/axes, or by 19/20/21 expressions."""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import ExpressionError, count_blobs, evaluate

from ..registry import AUTO, extents, fail, kernel, shape_str

_CROP_AXES = {1: "w", 2: "hw", 3: "chw", 4: "cdhw"}   # ncnn axis names in numpy order


def _crop_numpy_style(x: np.ndarray, starts, ends, axes) -> list[tuple[int, int]]:
    """(offset, size) per numpy axis from starts/ends/axes (ncnn: end 0 means 'to the end')."""
    roi = [(0, n) for n in x.shape]
    axes = list(axes) if len(axes) else list(range(x.ndim))
    for i, axis in enumerate(axes):
        if i >= len(starts) or i >= len(ends):
            fail(f"Crop has {len(axes)} axes but {len(starts)} starts and {len(ends)} ends")
        axis = 0 if x.ndim == 1 else (axis + x.ndim if axis < 0 else axis)
        if not 0 <= axis < x.ndim:
            continue                      # ncnn ignores axes it does not have
        n, start, end = x.shape[axis], starts[i], ends[i]
        start = 0 if start == AUTO else start
        end = n if end == AUTO else end
        offset = start if start >= 0 else n + start
        roi[axis] = (offset, min(n, end if end > 0 else n + end) - offset)
    return roi


def _crop_expressions(p, xs) -> list[tuple[int, int]]:
    """starts/ends/axes evaluated on the shapes of all the layer's inputs (crop.cpp eval_crop_expr)."""
    try:
        lists = [evaluate(e, [x.shape for x in xs]) if e else [] for e in
                 (p.starts_expr, p.ends_expr, p.axes_expr)]
    except ExpressionError as exc:
        fail(f"Crop expression: {exc}")
    return _crop_numpy_style(xs[0], *lists)


def _crop_offsets(p, x: np.ndarray) -> list[tuple[int, int]]:
    names = _CROP_AXES[x.ndim]
    roi = []
    for name, n in zip(names, x.shape):
        offset, offset2, out = p[name + "offset"], p[name + "offset2"], p["out" + name]
        size = n - offset - offset2
        roi.append((offset, size if out == AUTO else min(out, size)))
    return roi


def _crop_to_reference(p, x: np.ndarray, ref: np.ndarray) -> list[tuple[int, int]]:
    names, ref_ext = _CROP_AXES[x.ndim], extents(ref)
    roi = []
    for name, n in zip(names, x.shape):
        keep_c = name == "c" and ref.ndim != x.ndim
        roi.append((p[name + "offset"], n if keep_c else ref_ext[name]))
    return roi


@kernel("Crop")
def crop(p, weights, x, *refs):
    if p.starts_expr and p.ends_expr:
        if not p.axes_expr:
            fail("Crop with starts/ends expressions but no axes expression (21=): the real ncnn crashed")
        reads = max(count_blobs(e) for e in (p.starts_expr, p.ends_expr, p.axes_expr))
        if refs and reads <= 1:
            fail("Crop's expressions read only its first blob, but it has more inputs: the real ncnn "
                 "refuses to load it (invalid bottom_count for one_blob_only layer)")
        roi = _crop_expressions(p, (x, *refs))
    elif refs:
        if len(refs) > 1:
            fail(f"Crop takes one reference blob, got {len(refs)}")
        if p.woffset == AUTO:
            fail("Crop with woffset=-233 reads its roi from a blob; not supported by the interpreter")
        roi = _crop_to_reference(p, x, refs[0])
    elif len(p.starts) and len(p.ends):
        roi = _crop_numpy_style(x, p.starts, p.ends, p.axes)
    else:
        roi = _crop_offsets(p, x)
    for (offset, size), n in zip(roi, x.shape):
        if size <= 0 or offset < 0 or offset + size > n:
            fail(f"Crop roi (offset, size) {roi} does not fit shape {shape_str(x)}")
    return x[tuple(slice(o, o + s) for o, s in roi)]



"""ncnn Reduction: sum/asum/sumsq/mean/max/min/prod/l1/l2/logsum/logsumexp over chosen axes, times coeff."""
from __future__ import annotations

import numpy as np

from ..registry import F32, fail, kernel, shape_str


def _reduced_axes(p, x: np.ndarray) -> tuple[int, ...]:
    if p.reduce_all or x.ndim == 1:
        return tuple(range(x.ndim))
    if not p.fixbug0 and len(p.axes):
        fail("Reduction with axes needs fixbug0=1; current ncnn refuses to load it otherwise")
    axes = set()
    for a in p.axes:
        a = a + x.ndim if a < 0 else a
        if not 0 <= a < x.ndim:
            fail(f"Reduction axis {a} is out of range for shape {shape_str(x)}")
        axes.add(a)
    if not axes:
        fail("Reduction with reduce_all=0 and no axes leaves ncnn's output uninitialized")
    return tuple(sorted(axes))


def _l2(sumsq: np.ndarray) -> np.ndarray:
    return np.sqrt(np.where(sumsq < np.finfo(np.float32).tiny, F32(0), sumsq))


# operation -> (per-element map, reduce, post-map)
_REDUCTIONS = {
    0: (None, np.sum, None), 1: (np.abs, np.sum, None), 2: (np.square, np.sum, None),
    3: (None, np.sum, None), 4: (None, np.max, None), 5: (None, np.min, None),
    6: (None, np.prod, None), 7: (np.abs, np.sum, None), 8: (np.square, np.sum, _l2),
    9: (None, np.sum, np.log), 10: (np.exp, np.sum, np.log),
}


@kernel("Reduction")
def reduction(p, weights, x):
    if p.operation not in _REDUCTIONS:
        fail(f"unknown Reduction operation {p.operation}")
    axes = _reduced_axes(p, x)
    pre, reduce, post = _REDUCTIONS[p.operation]
    out = reduce(pre(x) if pre else x, axis=axes, keepdims=bool(p.keepdims))
    if post:
        out = post(out)
    coeff = F32(p.coeff)
    if p.operation == 3:   # mean
        coeff = coeff / F32(np.prod([x.shape[a] for a in axes]))
    if coeff != 1:
        out = out * coeff
    out = np.asarray(out, dtype=F32)
    return out.reshape(1) if out.ndim == 0 else out



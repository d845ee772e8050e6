"""ncnn Softmax along one axis (fixbug0=1 axis numbering)."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("Softmax")
def softmax(p, weights, x):
    if not p.fixbug0 and p.axis != 0:
        fail("Softmax with axis != 0 needs fixbug0=1; current ncnn refuses to load it otherwise")
    axis = p.axis + x.ndim if p.axis < 0 else p.axis
    if not 0 <= axis < x.ndim:
        fail(f"Softmax axis {p.axis} is out of range for shape {shape_str(x)}")
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)



"""ncnn Flip: reverse the listed axes."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("Flip")
def flip(p, weights, x):
    if not len(p.axes):
        return x
    axes = set()
    for a in p.axes:
        a = a + x.ndim if a < 0 else a
        if not 0 <= a < 4:
            fail(f"Flip axis {a} is out of range for shape {shape_str(x)}")
        axes.add(a)
    if x.ndim == 1:           # flip.cpp: a 1-D blob is flipped whatever the axes say
        return x[::-1].copy()
    return np.flip(x, axis=tuple(a for a in axes if a < x.ndim)).copy()



"""CumulativeSum: a running float32 sum along one axis (cumulativesum.cpp).

ncnn adds each element to the running sum of the ones before it, in order, as
np.cumsum does in float32.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("CumulativeSum")
def cumulative_sum(p, weights, x):
    axis = 0 if x.ndim == 1 else (p.axis + x.ndim if p.axis < 0 else p.axis)
    if not 0 <= axis < x.ndim:
        fail(f"CumulativeSum axis {p.axis} is out of range for shape {shape_str(x)}")
    return np.cumsum(x, axis=axis, dtype=np.float32)

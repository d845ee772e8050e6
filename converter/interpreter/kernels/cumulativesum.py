"""CumulativeSum: a running sum along one axis (cumulativesum.cpp)."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("CumulativeSum")
def cumulative_sum(p, weights, x):
    if x.ndim == 1:           # cumulativesum.cpp ignores the axis of a 1-D blob
        return np.cumsum(x, dtype=np.float32)
    axis = p.axis + x.ndim if p.axis < 0 else p.axis
    if not 0 <= axis < x.ndim:
        fail(f"CumulativeSum axis {p.axis} is out of range for shape {shape_str(x)}; ncnn returns an error")
    # left to right in float32; ncnn's SIMD x86 layer adds in blocks and rounds a few ulps apart
    return np.cumsum(x, axis=axis, dtype=np.float32)

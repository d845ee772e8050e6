"""ncnn Concat along one axis (numpy order, negative from the innermost)."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


def layer_axis(axis: int, x: np.ndarray, layer: str) -> int:
    positive = axis + x.ndim if axis < 0 else axis
    if not 0 <= positive < x.ndim:
        fail(f"{layer} axis {axis} is out of range for shape {shape_str(x)}")
    return positive


@kernel("Concat")
def concat(p, weights, *xs):
    axis = layer_axis(p.axis, xs[0], "Concat")
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != axis):
            fail(f"Concat on axis {axis} needs equal other extents, got "
                 + ", ".join(shape_str(x) for x in xs))
    return np.concatenate(xs, axis=axis)



"""Squeeze and ExpandDims: drop or add unit axes (squeeze.cpp, expanddims.cpp).

Axes count in numpy order (0 is the outermost axis, c for 3-D and 4-D blobs).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

# the axis-name flags of each rank, outermost first
_AXIS_FLAGS = {1: ("squeeze_w",), 2: ("squeeze_h", "squeeze_w"), 3: ("squeeze_c", "squeeze_h", "squeeze_w"),
               4: ("squeeze_c", "squeeze_d", "squeeze_h", "squeeze_w")}


def _check_loadable(op: str, axes) -> None:
    """The pip runtime (1.0.20261020) refuses to load an axis outside -4..3."""
    if any(not -4 <= a < 4 for a in axes):
        fail(f"{op} axes {list(axes)}: ncnn refuses to load an axis outside -4..3")


def _squeezed_axes(p, x: np.ndarray) -> set[int]:
    """Axes ncnn drops: the listed (or flagged) ones whose extent is 1; others are ignored."""
    if len(p.axes):
        wanted = {a + x.ndim if a < 0 else a for a in p.axes}
    else:
        wanted = {i for i, flag in enumerate(_AXIS_FLAGS[x.ndim]) if p[flag]}
    return {a for a in wanted if 0 <= a < x.ndim and x.shape[a] == 1}


@kernel("Squeeze")
def squeeze(p, weights, x):
    _check_loadable("Squeeze", p.axes)
    dropped = _squeezed_axes(p, x)
    kept = tuple(n for i, n in enumerate(x.shape) if i not in dropped)
    return x.reshape(kept or (1,))


@kernel("ExpandDims")
def expand_dims(p, weights, x):
    _check_loadable("ExpandDims", p.axes)
    out_rank = x.ndim + len(p.axes)
    axes = [a + out_rank if a < 0 else a for a in p.axes]
    # ncnn sets one flag per axis name: a repeated or out-of-range axis leaves fewer unit
    # axes than out_rank asks for, and its reshape then reads absent extents as 1
    if out_rank > 4 or len(set(axes)) != len(axes) or any(not 0 <= a < out_rank for a in axes):
        fail(f"ExpandDims axes {list(p.axes)} on shape {shape_str(x)}: ncnn needs distinct axes "
             f"within a rank of at most 4")
    return np.expand_dims(x, tuple(axes))

"""ncnn Tile: repeats per axis (numpy order), or the old axis/tiles form."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


def _tile_reps(p, x: np.ndarray) -> tuple[int, ...]:
    """Repeats per numpy axis of the output; ncnn aligns a repeats array to the innermost
    axes, except that 3 repeats on a 4-D blob mean d, h, w."""
    if not len(p.repeats):
        axis = p.axis + x.ndim if p.axis < 0 else p.axis
        if not 0 <= axis < x.ndim:
            fail(f"Tile axis {p.axis} is out of range for shape {shape_str(x)}")
        return tuple(p.tiles if i == axis else 1 for i in range(x.ndim))
    reps = [int(r) for r in p.repeats]
    if len(reps) > 4:
        fail(f"Tile with {len(reps)} repeats; ncnn handles at most 4")
    if len(reps) == 3 and x.ndim == 4:
        reps = [1] + reps
    if any(r < 1 for r in reps):
        fail(f"Tile repeats {list(p.repeats)} must be positive")
    return tuple(reps)


@kernel("Tile")
def tile(p, weights, x):
    reps = _tile_reps(p, x)
    if len(reps) < x.ndim:
        reps = (1,) * (x.ndim - len(reps)) + reps
    elif len(reps) > x.ndim:
        if x.ndim == 3 and len(reps) == 4:
            fail("Tile with 4 repeats on a 3-D blob: ncnn treats its c as d; not supported")
        x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
    return np.tile(x, reps)



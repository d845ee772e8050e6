"""ncnn Slice: one blob cut into consecutive pieces along an axis."""
from __future__ import annotations

import numpy as np

from ..registry import AUTO, fail, kernel
from .concat import layer_axis


def _slice_sizes(p, total: int, n: int) -> list[int]:
    sizes, start = [], 0
    for i in range(n):
        if len(p.indices):
            if i == n - 1:
                size = total - start
            elif i < len(p.indices):
                size = (p.indices[i] + total if p.indices[i] < 0 else p.indices[i]) - start
            else:
                fail(f"Slice has {n} outputs but only {len(p.indices)} indices")
        elif i < len(p.slices):
            size = p.slices[i]
            if size == AUTO:
                size = (total - start) // (n - i)
        else:
            fail(f"Slice has {n} outputs but only {len(p.slices)} slices")
        if size <= 0 or start + size > total:
            fail(f"Slice part {i} would span [{start}, {start + size}) of an axis of {total}")
        sizes.append(size)
        start += size
    return sizes


@kernel("Slice", outputs=True)
def slice_(p, weights, x, n_outputs):
    axis = 0 if x.ndim == 1 else layer_axis(p.axis, x, "Slice")
    sizes = _slice_sizes(p, x.shape[axis], n_outputs)
    ends = np.cumsum(sizes)
    lead = (slice(None),) * axis
    return tuple(x[lead + (slice(end - size, end),)] for size, end in zip(sizes, ends))



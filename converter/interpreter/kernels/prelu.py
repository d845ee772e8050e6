"""PReLU: x < 0 scaled by one slope, or by one slope per outermost index (w of 1-D, h of 2-D,
c of 3-D/4-D)."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32


@kernel("PReLU")
def prelu(p, weights, x):
    slope = weights[0].astype(F32)
    if p.num_slope > 1:
        if slope.size != x.shape[0]:
            fail(f"PReLU has {slope.size} slopes for input {shape_str(x)}; ncnn needs one per outer index")
        slope = slope.reshape((-1,) + (1,) * (x.ndim - 1))
    else:
        slope = slope[0]
    return np.where(x < 0, x * slope, x).astype(F32)

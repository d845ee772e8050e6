"""Diag (diag.cpp): a 1-D blob becomes a square matrix with it on the given diagonal; a 2-D
blob gives its given diagonal as a 1-D blob, like numpy.diag."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str


@kernel("Diag")
def diag(p, weights, x):
    if x.ndim not in (1, 2):
        fail(f"Diag input has shape {shape_str(x)}; ncnn makes no output for rank 3 or 4")
    out = np.diag(x, p.diagonal)
    if out.size == 0:
        fail(f"Diag diagonal {p.diagonal} lies outside input {shape_str(x)}; ncnn makes an empty blob")
    return out.copy()

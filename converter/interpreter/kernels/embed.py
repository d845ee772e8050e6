"""ncnn Embed: one row of weights per word index (the input's bits read as int32, clamped)."""
from __future__ import annotations

import numpy as np

from ..registry import F32, fail, kernel, shape_str


def word_indices(x: np.ndarray) -> np.ndarray:
    """The blob's bits read as int32, as ncnn's Embed reads them (a caller feeds int32 Mats)."""
    return np.ascontiguousarray(x, dtype=F32).reshape(-1).view(np.int32)


@kernel("Embed")
def embed(p, weights, x):
    if x.ndim != 1:     # ncnn reads `w` words from the start of the blob, whatever its rank
        fail(f"Embed takes a 1-D blob of word indices, got shape {shape_str(x)}")
    if p.int8_scale_term:
        fail("int8 Embed weights are not supported")
    table = weights[0].reshape(p.input_dim, p.num_output)
    rows = table[np.clip(word_indices(x), 0, p.input_dim - 1)]
    return rows + weights[1] if p.bias_term else rows



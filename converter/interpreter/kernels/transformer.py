"""Embed and RMSNorm: the layers token embeddings and RMS-normalized transformers need."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str
from .norm import normalized_axes

F32 = np.float32


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


@kernel("RMSNorm")
def rmsnorm(p, weights, x):
    axes, size = normalized_axes(p, x, "RMSNorm")
    rms = np.add.reduce(np.square(x), axis=axes, keepdims=True) / F32(size)
    out = x * (F32(1) / np.sqrt(rms + F32(p.eps)))
    if p.affine:
        out *= weights[0].reshape(x.shape[axes[0]:])
    return out

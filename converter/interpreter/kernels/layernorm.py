"""ncnn LayerNorm and RMSNorm: normalize over the innermost axes chosen by affine_size."""
from __future__ import annotations

import math

import numpy as np

from ..registry import F32, fail, kernel, shape_str


def _layernorm_group(p, x: np.ndarray) -> int:
    """How many trailing axes ncnn normalizes together."""
    if x.ndim <= 2 or p.affine_size == x.shape[-1]:
        return 1
    if x.ndim == 3 or p.affine_size == x.shape[-1] * x.shape[-2]:
        return 2
    return 3


def normalized_axes(p, x: np.ndarray, layer: str) -> tuple[tuple[int, ...], int]:
    """The trailing axes LayerNorm/RMSNorm normalize together and their element count; the affine
    weights must have that many values."""
    n = _layernorm_group(p, x)
    size = math.prod(x.shape[x.ndim - n:])
    if p.affine and p.affine_size != size:
        fail(f"{layer} affine_size {p.affine_size} does not match the {size} values "
             f"ncnn normalizes together for shape {shape_str(x)}")
    return tuple(range(x.ndim - n, x.ndim)), size


@kernel("LayerNorm")
def layernorm(p, weights, x):
    axes, size = normalized_axes(p, x, "LayerNorm")
    # ncnn's float32 formula: x * a + b with a = 1 / sqrt(var + eps), b = -mean * a
    count = F32(size)
    mean = np.add.reduce(x, axis=axes, keepdims=True) / count
    centered = x - mean
    var = np.add.reduce(np.square(centered, out=centered), axis=axes, keepdims=True) / count
    a = F32(1) / np.sqrt(var + F32(p.eps))
    out = x * a
    out += -mean * a
    if p.affine:
        gamma, beta = (w.reshape(x.shape[axes[0]:]) for w in weights)
        out *= gamma
        out += beta
    return out


@kernel("RMSNorm")
def rmsnorm(p, weights, x):
    axes, size = normalized_axes(p, x, "RMSNorm")
    rms = np.add.reduce(np.square(x), axis=axes, keepdims=True) / F32(size)
    out = x * (F32(1) / np.sqrt(rms + F32(p.eps)))
    if p.affine:
        out *= weights[0].reshape(x.shape[axes[0]:])
    return out



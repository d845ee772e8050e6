"""BatchNorm, LayerNorm, Softmax and Reduction (axes in numpy order, as current ncnn)."""
from __future__ import annotations

import math

import numpy as np

from ..buffers import empty
from ..registry import fail, kernel, shape_str

F32 = np.float32


def _outer(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A per-outermost-axis vector shaped to broadcast against x."""
    return v.reshape((-1,) + (1,) * (x.ndim - 1))


@kernel("BatchNorm", inplace=True)
def batchnorm(p, weights, x, out=None):
    slope, mean, var, bias = (w.astype(F32) for w in weights)
    if x.shape[0] != p.channels:
        fail(f"BatchNorm has {p.channels} channels, input outer extent is {x.shape[0]}")
    sqrt_var = np.sqrt(var + F32(p.eps))
    sqrt_var = np.where(sqrt_var == 0, F32(0.0001), sqrt_var)
    a = bias - slope * mean / sqrt_var
    b = slope / sqrt_var
    out = np.multiply(_outer(b, x), x, out=empty(x.shape) if out is None else out)
    out += _outer(a, x)
    return out


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


@kernel("Softmax")
def softmax(p, weights, x):
    if not p.fixbug0 and p.axis != 0:
        fail("Softmax with axis != 0 needs fixbug0=1; current ncnn refuses to load it otherwise")
    axis = p.axis + x.ndim if p.axis < 0 else p.axis
    if not 0 <= axis < x.ndim:
        fail(f"Softmax axis {p.axis} is out of range for shape {shape_str(x)}")
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _reduced_axes(p, x: np.ndarray) -> tuple[int, ...]:
    if p.reduce_all or x.ndim == 1:
        return tuple(range(x.ndim))
    if not p.fixbug0 and len(p.axes):
        fail("Reduction with axes needs fixbug0=1; current ncnn refuses to load it otherwise")
    axes = set()
    for a in p.axes:
        a = a + x.ndim if a < 0 else a
        if not 0 <= a < x.ndim:
            fail(f"Reduction axis {a} is out of range for shape {shape_str(x)}")
        axes.add(a)
    if not axes:
        fail("Reduction with reduce_all=0 and no axes leaves ncnn's output uninitialized")
    return tuple(sorted(axes))


def _l2(sumsq: np.ndarray) -> np.ndarray:
    return np.sqrt(np.where(sumsq < np.finfo(np.float32).tiny, F32(0), sumsq))


# operation -> (per-element map, reduce, post-map)
_REDUCTIONS = {
    0: (None, np.sum, None), 1: (np.abs, np.sum, None), 2: (np.square, np.sum, None),
    3: (None, np.sum, None), 4: (None, np.max, None), 5: (None, np.min, None),
    6: (None, np.prod, None), 7: (np.abs, np.sum, None), 8: (np.square, np.sum, _l2),
    9: (None, np.sum, np.log), 10: (np.exp, np.sum, np.log),
}


@kernel("Reduction")
def reduction(p, weights, x):
    if p.operation not in _REDUCTIONS:
        fail(f"unknown Reduction operation {p.operation}")
    axes = _reduced_axes(p, x)
    pre, reduce, post = _REDUCTIONS[p.operation]
    out = reduce(pre(x) if pre else x, axis=axes, keepdims=bool(p.keepdims))
    if post:
        out = post(out)
    coeff = F32(p.coeff)
    if p.operation == 3:   # mean
        coeff = coeff / F32(np.prod([x.shape[a] for a in axes]))
    if coeff != 1:
        out = out * coeff
    out = np.asarray(out, dtype=F32)
    return out.reshape(1) if out.ndim == 0 else out

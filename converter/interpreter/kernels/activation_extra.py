"""Softplus, Mish, CELU and Shrink with the formulas of ncnn's reference layers (float32)."""
from __future__ import annotations

import numpy as np

from ..registry import kernel

F32 = np.float32


@kernel("Softplus")
def softplus(p, weights, x):
    """log(exp(x) + 1), as ncnn writes it: inf above ~88, like the runtime."""
    return np.log(np.exp(x) + F32(1)).astype(F32)


@kernel("Mish")
def mish(p, weights, x):
    """x * tanh(softplus(x)), softplus taken as x above 20 and exp(x) below -20 (ncnn's thresholds)."""
    y = np.where(x > 20, x, np.where(x < -20, np.exp(np.minimum(x, 0)), np.log(np.exp(np.minimum(x, 20)) + F32(1))))
    return (x * np.tanh(y)).astype(F32)


@kernel("CELU")
def celu(p, weights, x):
    alpha = F32(p.alpha)
    return np.where(x < 0, (np.exp(np.minimum(x, 0) / alpha) - F32(1)) * alpha, x).astype(F32)


@kernel("Shrink")
def shrink(p, weights, x):
    lambd, bias = F32(p.lambd), F32(p.bias)
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, F32(0))).astype(F32)

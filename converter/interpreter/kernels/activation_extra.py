"""Mish, CELU and Shrink: element-wise layers with ncnn's reference formulas (mish.cpp, celu.cpp, shrink.cpp)."""
from __future__ import annotations

import numpy as np

from ..registry import kernel

F32 = np.float32
MISH_THRESHOLD = F32(20)     # mish.cpp: softplus is x above it, exp(x) below minus it


@kernel("Mish")
def mish(p, weights, x):
    with np.errstate(over="ignore"):
        softplus = np.where(x > MISH_THRESHOLD, x,
                            np.where(x < -MISH_THRESHOLD, np.exp(x), np.log1p(np.exp(x))))
    return (x * np.tanh(softplus)).astype(F32)


@kernel("CELU")
def celu(p, weights, x):
    alpha = F32(p.alpha)
    with np.errstate(over="ignore"):
        return np.where(x < 0, (np.exp(x / alpha) - F32(1)) * alpha, x).astype(F32)


@kernel("Shrink")
def shrink(p, weights, x):
    bias, lambd = F32(p.bias), F32(p.lambd)
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, F32(0))).astype(F32)

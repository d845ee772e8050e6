"""Softplus, AbsVal, BNLL, Threshold, Exp, Log, Power and DeepCopy: element-wise layers,
each with the formula and float32 evaluation order of its ncnn source (softplus.cpp, ...)."""
from __future__ import annotations

import numpy as np

from ..registry import kernel

F32 = np.float32
NATURAL = -1.0            # Exp/Log base meaning e


def _affine(p, x: np.ndarray) -> np.ndarray:
    """shift + x * scale, as Exp, Log and Power compute their argument."""
    return F32(p.shift) + x * F32(p.scale)


@kernel("Softplus")
def softplus(p, weights, x):
    with np.errstate(over="ignore"):     # ncnn's logf(expf(x) + 1) is inf past x ~ 88.7
        return np.log(np.exp(x) + F32(1))


@kernel("AbsVal")
def absval(p, weights, x):
    return np.abs(x)


@kernel("BNLL")
def bnll(p, weights, x):
    return np.maximum(x, F32(0)) + np.log(F32(1) + np.exp(-np.abs(x)))


@kernel("Threshold")
def threshold(p, weights, x):
    return (x > F32(p.threshold)).astype(F32)


@kernel("Exp")
def exp(p, weights, x):
    with np.errstate(over="ignore", invalid="ignore"):
        if p.base == NATURAL:
            return np.exp(_affine(p, x))
        return np.power(F32(p.base), _affine(p, x))


@kernel("Log")
def log(p, weights, x):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(_affine(p, x))
        return out if p.base == NATURAL else out * (F32(1) / np.log(F32(p.base)))


@kernel("Power")
def power(p, weights, x):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(_affine(p, x), F32(p.power))


@kernel("DeepCopy")
def deep_copy(p, weights, x):
    return x.copy()

"""Element-wise layers: activations (ReLU, Clip, ELU, SELU, Sigmoid, Swish, TanH, HardSigmoid,
HardSwish, GELU, Erf, Mish, CELU, Shrink), UnaryOp, Dropout, and the fused activation of conv/fc layers."""
from __future__ import annotations

import numpy as np

from ..buffers import empty, recycle
from ..registry import fail, kernel

F32 = np.float32
MISH_THRESHOLD = F32(20)     # mish.cpp: softplus is x above it, exp(x) below minus it
SIGMOID_CLAMP = F32(88.3762626647949)  # ncnn clamps sigmoid's input to +-this before expf


# ---- erf / erfc without scipy: erf from a series near 0 (relative accuracy where erf is
#      small) and a rational fit beyond; erfc from the fit alone ---------------------------

SERIES_LIMIT = 1.0
SERIES_TERMS = 14     # for |x| < 1 the first omitted term is below 1 / (14! * 29) < 4e-13


def _erf_series(x: np.ndarray) -> np.ndarray:
    """Maclaurin series of erf in float64, far more exact than float32 needs for |x| < 1."""
    x2 = x * x
    term, total = x.copy(), x.copy()
    for n in range(1, SERIES_TERMS):
        term *= -x2 / n
        total += term / (2 * n + 1)
    return total * (2.0 / np.sqrt(np.pi))


def _erfc_tail(z: np.ndarray) -> np.ndarray:
    """erfc(z) for z >= 0 (Numerical Recipes' erfcc fit, relative error < 1.2e-7)."""
    t = 1.0 / (1.0 + 0.5 * z)
    coeffs = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
              -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223)
    poly = np.zeros_like(z)
    for c in coeffs:
        poly = poly * t + c
    return t * np.exp(-z * z + poly)


def _split_eval(x, near, far) -> np.ndarray:
    """near(x) where |x| < SERIES_LIMIT, far(x) elsewhere, each computed only where used."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < SERIES_LIMIT
    out[small] = near(x[small])
    out[~small] = far(x[~small])
    return out


def erf(x: np.ndarray) -> np.ndarray:
    return _split_eval(x, _erf_series, lambda v: np.sign(v) * (1.0 - _erfc_tail(np.abs(v))))


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc in float64 from one fit everywhere: relative error < 1.2e-7, a float32 ulp or two
    (erfc never comes near 0 from below, so the series' extra precision buys nothing)."""
    x = np.asarray(x, dtype=np.float64)
    tail = _erfc_tail(np.abs(x))
    return np.where(x >= 0, tail, 2.0 - tail)


# ---- shared formulas ---------------------------------------------------------
# np.clip with float32 bounds, never np.maximum/np.minimum with a scalar: numpy 2.4 has no
# SIMD loop for the scalar case, and clip is 2.4x faster on a 3 MB blob (NaN stays NaN in both).

def sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """1 / (1 + exp(-x)) with ncnn's input clamp; `out` may be x itself."""
    out = empty(x.shape) if out is None else out
    np.clip(x, -SIGMOID_CLAMP, SIGMOID_CLAMP, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.add(out, F32(1), out=out)
    return np.divide(F32(1), out, out=out)



def hardsigmoid(x: np.ndarray, alpha: float, beta: float, out: np.ndarray | None = None) -> np.ndarray:
    """ncnn: 0 below -beta/alpha, 1 above (1-beta)/alpha, x*alpha+beta between; clipping the line
    is the same but for the last ulp at the two bounds, and takes 3 passes instead of 8."""
    t = np.multiply(x, F32(alpha), out=out if out is not None and out.shape == x.shape else None)
    t += F32(beta)
    return np.clip(t, F32(0), F32(1), out=t)


def hardswish(x: np.ndarray, alpha: float, beta: float, out: np.ndarray | None = None) -> np.ndarray:
    """x * hardsigmoid(x); ncnn's 'above the bound' branch returns x, which is x * 1.
    The factor goes to pooled scratch memory: a fresh multi-megabyte temporary costs
    more in page faults than the arithmetic."""
    t = hardsigmoid(x, alpha, beta, out=empty(x.shape))
    if out is None or out.shape != x.shape:
        return np.multiply(x, t, out=t)
    np.multiply(x, t, out=out)
    recycle(t)
    return out


def fused_mish(x: np.ndarray) -> np.ndarray:
    """Mish as fused into conv layers (activation_type 5): no softplus thresholds."""
    return (x * np.tanh(np.log(np.exp(x) + F32(1)))).astype(F32)


def fused_activation_fn(activation_type: int, params):
    """ncnn's activation_type 0..6 as fused into Convolution / InnerProduct / Deconvolution:
    a function of the layer's freshly computed output, which it may overwrite."""
    params = [F32(v) for v in params]
    if activation_type == 0:
        return lambda x: x
    if activation_type == 1:
        return lambda x: np.clip(x, F32(0), F32(np.inf), out=x)
    if activation_type == 2:
        return lambda x: np.multiply(x, params[0], out=x, where=x < 0)
    if activation_type == 3:
        return lambda x: np.clip(x, params[0], params[1], out=x)
    if activation_type == 4:
        return lambda x: sigmoid(x, out=x)
    if activation_type == 5:
        return fused_mish
    if activation_type == 6:
        return lambda x: hardswish(x, params[0], params[1], out=x)
    fail(f"unknown fused activation_type {activation_type}")


def fused_activation(x: np.ndarray, activation_type: int, params) -> np.ndarray:
    """Apply a fused activation to a fresh output `x` (which it may overwrite)."""
    return fused_activation_fn(activation_type, params)(x)


# ---- layers ------------------------------------------------------------------

def _output(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """Where an element-wise layer writes: over its dead input (`out`), else fresh memory."""
    return empty(x.shape) if out is None else out


@kernel("ReLU", inplace=True)
def relu(p, weights, x, out=None):
    out = _output(x, out)
    if p.slope == 0:
        return np.clip(x, F32(0), F32(np.inf), out=out)
    np.copyto(out, x)
    return np.multiply(out, F32(p.slope), out=out, where=x < 0)


@kernel("Clip", inplace=True)
def clip(p, weights, x, out=None):
    return np.clip(x, F32(p.min), F32(p.max), out=_output(x, out))


@kernel("ELU")
def elu(p, weights, x):
    return np.where(x < 0, F32(p.alpha) * (np.exp(x) - F32(1)), x)


@kernel("SELU")
def selu(p, weights, x):
    alpha, lam = F32(p.alpha), F32(p["lambda"])
    return np.where(x < 0, (np.exp(x) - F32(1)) * (alpha * lam), x * lam)


@kernel("Sigmoid", inplace=True)
def sigmoid_layer(p, weights, x, out=None):
    return sigmoid(x, out)


@kernel("Swish", inplace=True)
def swish(p, weights, x, out=None):
    denominator = np.negative(x, out=empty(x.shape))
    np.exp(denominator, out=denominator)
    np.add(denominator, F32(1), out=denominator)
    result = np.divide(x, denominator, out=_output(x, out))
    recycle(denominator)
    return result


@kernel("TanH", inplace=True)
def tanh(p, weights, x, out=None):
    return np.tanh(x, out=_output(x, out))


@kernel("HardSigmoid", inplace=True)
def hardsigmoid_layer(p, weights, x, out=None):
    return hardsigmoid(x, p.alpha, p.beta, out)


@kernel("HardSwish", inplace=True)
def hardswish_layer(p, weights, x, out=None):
    return hardswish(x, p.alpha, p.beta, out)


@kernel("GELU")
def gelu(p, weights, x):
    if p.fast_gelu:
        inner = F32(0.79788452) * (x + F32(0.044715) * x * x * x)
        return F32(0.5) * x * (F32(1) + np.tanh(inner))
    return (0.5 * x * erfc(-0.70710678 * x.astype(np.float64))).astype(F32)


@kernel("Erf")
def erf_layer(p, weights, x):
    return erf(x).astype(F32)


@kernel("Dropout")
def dropout(p, weights, x):
    return x if p.scale == 1.0 else x * F32(p.scale)


def _ieee_rsqrt(x):
    return F32(1) / np.sqrt(x)


def _ncnn_atan(x):
    """ncnn's atan is NaN at +-inf (measured with the pip runtime), pi/2 at FLT_MAX."""
    return np.where(np.isinf(x), F32(np.nan), np.arctan(x)).astype(x.dtype, copy=False)


UNARY = {
    0: np.abs, 1: np.negative, 2: np.floor, 3: np.ceil, 4: np.square, 5: np.sqrt,
    6: _ieee_rsqrt, 7: np.exp, 8: np.log, 9: np.sin, 10: np.cos, 11: np.tan,
    12: np.arcsin, 13: np.arccos, 14: _ncnn_atan, 15: lambda x: F32(1) / x, 16: np.tanh,
    17: np.log10, 18: np.rint, 19: np.trunc, 20: np.sign, 21: np.expm1, 22: np.sinh,
    23: np.arcsinh, 24: np.cosh, 25: np.arccosh, 26: np.arctanh, 27: np.log1p,
}


@kernel("UnaryOp", inplace=True)
def unaryop(p, weights, x, out=None):
    op = UNARY.get(p.op_type)
    if op is None:
        fail(f"unknown UnaryOp op_type {p.op_type}")
    return op(x, out=_output(x, out)) if isinstance(op, np.ufunc) else op(x)


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



"""BinaryOp (with ncnn's own rank-mismatch broadcasting) and Eltwise."""
from __future__ import annotations

import numpy as np

from ..buffers import empty
from ..registry import fail, kernel, shape_str

F32 = np.float32


def _ieee_remainder(a, b):
    """C's remainderf: a - n*b with n = a/b rounded half to even (not numpy's floored mod)."""
    a64, b64 = a.astype(np.float64), np.asarray(b, dtype=np.float64)
    return (a64 - np.rint(a64 / b64) * b64).astype(F32)


def _logaddexp(a, b):
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    return hi + np.log1p(np.exp(lo - hi))


# op(a, b) for each op_type; the r-variants swap the operands
_FORWARD = {
    0: np.add, 1: np.subtract, 2: np.multiply, 3: np.divide, 4: np.maximum, 5: np.minimum,
    6: np.power, 10: np.arctan2, 12: np.fmod, 14: _logaddexp,
    15: lambda a, b: np.floor(a / b), 17: _ieee_remainder,
}
_SWAPPED = {7: 1, 8: 3, 9: 6, 11: 10, 13: 12, 16: 15, 18: 17}


def _result_shape(a, b) -> tuple:
    """The broadcast shape; for an array and a scalar, or arrays of equal rank, without
    np.broadcast_shapes (which builds arrays: a third of a small BinaryOp's time)."""
    if np.ndim(b) == 0:
        return np.shape(a)
    if np.ndim(a) == 0:
        return b.shape
    if a.ndim == b.ndim:
        return tuple(eb if ea == 1 else ea for ea, eb in zip(a.shape, b.shape))
    return np.broadcast_shapes(a.shape, b.shape)


POW = 6


def _check_pow_base(base) -> None:
    """ncnn's SIMD pow is exp(b * log(a)): any base <= 0 in a vector lane comes out as garbage
    (2.4e38 on x86 even for 0**2 or (-2)**2; measured); only the scalar tail uses powf."""
    if np.any(np.asarray(base) <= 0):
        fail("BinaryOp pow with a base <= 0: the real ncnn computes garbage there "
             "(its SIMD pow is exp(b*log(a)))")


def binary(op_type: int, a, b, out: np.ndarray | None = None):
    """op(a, b) with numpy broadcasting; written into `out` when given and of the result's shape."""
    if op_type in _SWAPPED:
        op_type, a, b = _SWAPPED[op_type], b, a
    if op_type == POW:
        _check_pow_base(a)
    op = _FORWARD.get(op_type)
    if op is None:
        fail(f"unknown BinaryOp op_type {op_type}")
    if not isinstance(op, np.ufunc):
        return op(a, b)
    shape = _result_shape(a, b)
    return op(a, b, out=out if out is not None and out.shape == shape else empty(shape))


def align_rank(x: np.ndarray, other: np.ndarray) -> np.ndarray:
    """ncnn's expansion of the lower-rank operand to the other's rank (numpy order).

    The lower-rank operand goes to the OUTER axes (trailing 1s are appended), except
    a 1-D operand whose length differs from the other's outermost extent (h for 2-D,
    c for 3-D/4-D): that one runs along w, the innermost axis.
    """
    pad = other.ndim - x.ndim
    if pad <= 0:
        return x
    if x.ndim == 1 and x.shape[0] != other.shape[0]:
        return x.reshape((1,) * pad + x.shape)
    return x.reshape(x.shape + (1,) * pad)


def ncnn_broadcast(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both operands at equal rank, or an error where ncnn would index out of range."""
    a2, b2 = align_rank(a, b), align_rank(b, a)
    for ea, eb in zip(a2.shape, b2.shape):
        if ea != eb and ea != 1 and eb != 1:
            how = "" if a.ndim == b.ndim else f" (ncnn aligns them as {shape_str(a2)} and {shape_str(b2)})"
            fail(f"operand shapes {shape_str(a)} and {shape_str(b)} do not broadcast in ncnn{how}; "
                 f"ncnn would compute garbage here")
    return a2, b2


@kernel("BinaryOp", inplace=True)
def binaryop(p, weights, a, b=None, out=None):
    if p.with_scalar:
        return binary(p.op_type, a, F32(p.b), out)
    if b is None:
        fail("BinaryOp without with_scalar needs two inputs")
    a2, b2 = ncnn_broadcast(a, b)
    return binary(p.op_type, a2, b2, None if out is None else a2)


@kernel("Eltwise")
def eltwise(p, weights, *xs):
    if len(xs) < 2:
        fail("Eltwise needs at least two inputs")
    if any(x.shape != xs[0].shape for x in xs):
        fail("Eltwise inputs must have equal shapes, got " + ", ".join(shape_str(x) for x in xs))
    if p.op_type == 0:
        return np.prod(np.stack(xs), axis=0)
    if p.op_type == 2:
        return np.max(np.stack(xs), axis=0)
    if p.op_type != 1:
        fail(f"unknown Eltwise op_type {p.op_type}")
    if len(p.coeffs) == 0:
        return np.sum(np.stack(xs), axis=0)
    if len(p.coeffs) < len(xs):
        fail(f"Eltwise has {len(xs)} inputs but only {len(p.coeffs)} coeffs")
    out = xs[0] * F32(p.coeffs[0])
    for x, c in zip(xs[1:], p.coeffs[1:]):
        out = out + x * F32(c)
    return out

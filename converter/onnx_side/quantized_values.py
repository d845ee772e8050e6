"""QuantizeLinear / DequantizeLinear on constant values, as the ONNX spec and onnxruntime compute
them (scale per tensor, per axis or per block of an axis). passes/fold_constants.py folds with these: onnx's reference
evaluator has no Q/DQ before opset 19, and quantized models carry their weights through
DequantizeLinear and constants such as a class token through a Q/DQ pair."""
from __future__ import annotations

import numpy as np


INT4 = ("int4", "uint4")     # onnx's numpy types for 4-bit integers (ml_dtypes)


def _along(node_axis: int, ndim: int, value: np.ndarray) -> np.ndarray:
    """A scale or zero point shaped to broadcast along `node_axis` (one value stays a scalar)."""
    if value.size <= 1:
        return value.reshape(())
    shape = [1] * ndim
    shape[node_axis % ndim] = -1
    return value.reshape(shape)


def blocked_per_element(value: np.ndarray, x_shape: tuple, axis: int, block_size: int) -> np.ndarray:
    """Blocked quantization (opset 21): `value` has x's rank with ceil(n / block_size) entries along
    `axis`; each covers block_size consecutive elements there."""
    axis %= len(x_shape)
    if value.ndim == 0:         # the default zero point
        return value
    if value.ndim != len(x_shape) or value.shape[axis] * block_size < x_shape[axis]:
        raise ValueError(f"blocked scale of shape {list(value.shape)} does not cover {list(x_shape)}")
    return np.repeat(value, block_size, axis=axis).take(range(x_shape[axis]), axis=axis)


def _integer(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu" or x.dtype.name in INT4


def quantize_linear(x, scale, zero_point=None, axis: int = 1, saturate: int = 1, block_size: int = 0,
                    **_) -> list[np.ndarray]:
    """round_half_even(x / scale) + zero point, saturated to the zero point's type (uint8 without one)."""
    if zero_point is not None and zero_point.dtype.kind not in "iu":
        raise ValueError("float8 and 4-bit quantization is not folded")
    zero = np.zeros((), np.uint8) if zero_point is None else zero_point
    info = np.iinfo(zero.dtype)
    x = np.asarray(x, np.float32)
    spread = (lambda v: blocked_per_element(v, x.shape, axis, block_size)) if block_size else \
        (lambda v: _along(axis, x.ndim, v))
    q = np.rint(x / spread(scale.astype(np.float32))) + spread(zero.astype(np.float32))
    return [np.clip(q, info.min, info.max).astype(zero.dtype)]


def dequantize_linear(x, scale, zero_point=None, axis: int = 1, block_size: int = 0, **_) -> list[np.ndarray]:
    """(x - zero point) * scale in float32: the integer difference first, then one rounding."""
    if not _integer(x) or (zero_point is not None and not _integer(zero_point)):
        raise ValueError("float8 dequantization is not folded")
    zero = np.zeros((), np.int64) if zero_point is None else zero_point
    spread = (lambda v: blocked_per_element(v, x.shape, axis, block_size)) if block_size else \
        (lambda v: _along(axis, x.ndim, v))
    diff = (x.astype(np.int64) - spread(zero.astype(np.int64))).astype(np.float32)
    return [diff * spread(scale.astype(np.float32))]


QDQ_FOLDS = {"QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear}

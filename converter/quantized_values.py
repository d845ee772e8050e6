"""QuantizeLinear / DequantizeLinear on constant values, as the ONNX spec and onnxruntime compute
them (scale per tensor or per axis). passes/fold_constants.py folds with these: onnx's reference
evaluator has no Q/DQ before opset 19, and quantized models carry their weights through
DequantizeLinear and constants such as a class token through a Q/DQ pair."""
from __future__ import annotations

import numpy as np


def _along(node_axis: int, ndim: int, value: np.ndarray) -> np.ndarray:
    """A scale or zero point shaped to broadcast along `node_axis` (one value stays a scalar)."""
    if value.size <= 1:
        return value.reshape(())
    shape = [1] * ndim
    shape[node_axis % ndim] = -1
    return value.reshape(shape)


def quantize_linear(x, scale, zero_point=None, axis: int = 1, saturate: int = 1, block_size: int = 0,
                    **_) -> list[np.ndarray]:
    """round_half_even(x / scale) + zero point, saturated to the zero point's type (uint8 without one)."""
    if block_size or (zero_point is not None and zero_point.dtype.kind not in "iu"):
        raise ValueError("blocked or float8 quantization is not folded")
    zero = np.zeros((), np.uint8) if zero_point is None else zero_point
    info = np.iinfo(zero.dtype)
    q = np.rint(np.asarray(x, np.float32) / _along(axis, np.ndim(x), scale.astype(np.float32)))
    q = q + _along(axis, np.ndim(x), zero.astype(np.float32))
    return [np.clip(q, info.min, info.max).astype(zero.dtype)]


def dequantize_linear(x, scale, zero_point=None, axis: int = 1, block_size: int = 0, **_) -> list[np.ndarray]:
    """(x - zero point) * scale in float32: the integer difference first, then one rounding."""
    if block_size or x.dtype.kind not in "iu":
        raise ValueError("blocked or float8 dequantization is not folded")
    zero = np.zeros((), x.dtype) if zero_point is None else zero_point
    diff = (x.astype(np.int64) - _along(axis, x.ndim, zero.astype(np.int64))).astype(np.float32)
    return [diff * _along(axis, x.ndim, scale.astype(np.float32))]


QDQ_FOLDS = {"QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear}

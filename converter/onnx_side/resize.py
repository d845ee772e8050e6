"""What ONNX Resize computes along one axis, as onnxruntime's CPU kernel does it.

`axis_matrix` returns the (out, size) matrix that maps one input line to one
output line. ONNX Resize is separable in every mode the converter lowers, so
two such matrices describe a 2-D resize; the lowering compares them with the
ones ncnn's Interp applies. The arithmetic follows onnxruntime (float32
coordinates, its rounding rules, its clamping), since that is the reference
the converted model is checked against.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32


class Unmodelled(ValueError):
    """A case whose onnxruntime arithmetic this module does not reproduce."""


@dataclass(frozen=True)
class ResizeMode:
    mode: str = "nearest"                     # nearest | linear | cubic
    transform: str = "half_pixel"             # coordinate_transformation_mode
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False


def _source_coordinate(transform: str, x: np.ndarray, scale: F32, out: int, size: int) -> np.ndarray:
    """onnxruntime's original coordinate of each output index, in float32."""
    half = F32(0.5)
    if transform == "asymmetric":
        return x / scale
    if transform in ("half_pixel", "pytorch_half_pixel"):
        coord = (x + half) / scale - half
        return coord if transform == "half_pixel" or out > 1 else np.zeros_like(x)
    if transform in ("tf_half_pixel_for_nearest", "tf_half_pixel_for_nn"):
        return (x + half) / scale
    if transform == "align_corners":
        return np.zeros_like(x) if out == 1 else x * F32(size - 1) / F32(out - 1)
    if transform == "half_pixel_symmetric":
        # half_pixel plus a centring offset when out != scale * size; onnxruntime's float/double
        # mix there rounds differently from the spec, so only the offset-free case is modelled
        if F32(scale * F32(size)) != F32(out):
            raise Unmodelled("half_pixel_symmetric with an output size other than scale * input size")
        return (x + half) / scale - half
    raise ValueError(f"coordinate_transformation_mode {transform!r}")


def _round_half_away(whole: np.ndarray, frac: np.ndarray) -> np.ndarray:
    return np.where(np.abs(frac) >= F32(0.5), whole + np.sign(frac), whole)


def _nearest_index(nearest_mode: str, coord: np.ndarray, downsampling: bool) -> np.ndarray:
    whole = np.trunc(coord)
    frac = coord - whole                              # exact in float32
    if nearest_mode == "round_prefer_floor":          # halves go down
        return np.where(frac == F32(0.5), whole, _round_half_away(whole, frac))
    if nearest_mode == "round_prefer_ceil":           # C's round: halves away from zero
        return _round_half_away(whole, frac)
    if nearest_mode == "floor":
        return np.floor(coord)
    if nearest_mode == "ceil":
        return np.ceil(coord)
    if nearest_mode == "simple":                     # opset 10 and Upsample
        return np.ceil(coord) if downsampling else np.trunc(coord)
    raise ValueError(f"nearest_mode {nearest_mode!r}")


def _cubic_coefficients(s: np.ndarray, a: F32) -> np.ndarray:
    s = np.abs(s)
    one, two = s + F32(1), F32(1) - s
    return np.stack([((a * one - 5 * a) * one + 8 * a) * one - 4 * a,
                     ((a + 2) * s - (a + 3)) * s * s + 1,
                     ((a + 2) * two - (a + 3)) * two * two + 1,
                     ((a * (two + 1) - 5 * a) * (two + 1) + 8 * a) * (two + 1) - 4 * a], axis=1).astype(F32)


def nearest_sources(m: ResizeMode, size: int, out: int, scale: float) -> np.ndarray:
    """The source index of each output position of a nearest resize (the one-hot rows of axis_matrix)."""
    scale = F32(scale)
    x = np.arange(out, dtype=F32)
    coord = x if scale == 1 else _source_coordinate(m.transform, x, scale, out, size)
    return np.clip(_nearest_index(m.nearest_mode, coord, bool(scale < 1)), 0, size - 1).astype(np.int64)


def axis_matrix(m: ResizeMode, size: int, out: int, scale: float) -> np.ndarray:
    """The (out, size) matrix onnxruntime applies along an axis of `size` resized to `out`
    with scale `scale` (the given one, or out/size when sizes were given)."""
    scale = F32(scale)
    x = np.arange(out, dtype=F32)
    # onnxruntime skips the coordinate transform on axes whose scale is exactly 1
    coord = x if scale == 1 else _source_coordinate(m.transform, x, scale, out, size)
    rows = np.arange(out)
    matrix = np.zeros((out, size))
    if m.mode == "nearest":
        matrix[rows, nearest_sources(m, size, out, scale)] = 1
    elif m.mode == "linear":
        c = np.clip(coord, F32(0), F32(size - 1))
        low = np.minimum(c.astype(np.int64), size - 1)
        high = np.minimum(low + 1, size - 1)
        w_low, w_high = np.abs(c - high.astype(F32)), np.abs(c - low.astype(F32))
        same = low == high
        np.add.at(matrix, (rows, low), np.where(same, F32(0.5), w_low))
        np.add.at(matrix, (rows, high), np.where(same, F32(0.5), w_high))
    elif m.mode == "cubic":
        start = np.floor(coord)
        coeffs = _cubic_coefficients((coord - start).astype(F32), F32(m.cubic_coeff_a))
        taps = start.astype(np.int64)[:, None] + np.arange(-1, 3)
        if m.exclude_outside:
            coeffs = np.where((taps < 0) | (taps >= size), F32(0), coeffs)
            coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
        np.add.at(matrix, (np.broadcast_to(rows[:, None], taps.shape), np.clip(taps, 0, size - 1)), coeffs)
    else:
        raise ValueError(f"mode {m.mode!r}")
    return matrix

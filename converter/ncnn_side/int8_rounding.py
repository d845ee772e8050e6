"""ncnn's float -> int8 rounding (quantize_to_int8, x86 float2int8_sse), shared by the int8 kernels of
the interpreter and the lowerings that quantize weights as ncnn's own tools do."""
from __future__ import annotations

import numpy as np

F32 = np.float32


def float2int8(x: np.ndarray, scale) -> np.ndarray:
    """ncnn's quantize_to_int8 of a float32 array: whole numbers in -127..127, as float64."""
    v = np.asarray(x, F32) * F32(scale)
    v = v + np.copysign(F32(0.5), v).astype(F32)
    return np.clip(np.trunc(v), -127, 127).astype(np.float64)

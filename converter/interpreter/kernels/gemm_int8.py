"""ncnn's int8 Gemm (quantize_term 1..399; gemm.cpp forward_int8, x86 gemm_x86_int8), called by the
Gemm kernel. A constant operand is stored int8 with its scales (A: one per row, B: one); a runtime
operand is quantized when the layer runs: A per row, B as a whole, each at 127 / its largest
magnitude (1 where that is 0) with float2int8 (converter/interpreter/int8.py). The int32 sums are
scaled back by 1 / (A row scale * B scale), then C * beta is added and alpha multiplies.
"""
from __future__ import annotations

import numpy as np

from converter.interpreter.int8 import float2int8
from converter.ncnn_side.gemm_block_quant import int8_gemm
from ..registry import fail, shape_str

__all__ = ["gemm_int8", "int8_gemm"]
F32 = np.float32


def _scales(x: np.ndarray, axis) -> np.ndarray:
    absmax = np.max(np.abs(x), axis=axis, keepdims=axis is not None).astype(F32)
    return np.where(absmax == 0, F32(1), F32(127) / np.where(absmax == 0, F32(1), absmax)).astype(F32)


def gemm_int8(p, weights, inputs, c_term, matrix):
    """`c_term(c, m, n)` and `matrix(x, what)` are the float Gemm's C broadcast and operand reading."""
    if p.transA or not p.transB or p.output_N1M or p.output_transpose or p.constantA:
        fail("int8 Gemm takes a runtime A, a constant transposed B and a plain output")
    weights, inputs = list(weights), list(inputs)
    b = np.asarray(weights.pop(0)).reshape(p.constantN, p.constantK).astype(np.float64)
    if np.abs(b).max(initial=0) > 127:
        fail("int8 Gemm's B must hold int8 values")
    a = matrix(inputs.pop(0), "A").astype(F32)
    if a.shape[1] != p.constantK:
        fail(f"int8 Gemm K mismatch: A {shape_str(a)}, constantK={p.constantK}")
    c = None
    if p.constantC and p.constant_broadcast_type_C != -1:
        c = weights.pop(0)
    b_scale = F32(np.asarray(weights.pop(0)).ravel()[0])
    a_scales = _scales(a, 1)
    m, n = a.shape[0], p.constantN
    sums = float2int8(a, a_scales) @ b.T                       # exact in float64 below 2**53
    descale = (F32(1) / (a_scales * b_scale)).astype(F32)       # per row of A
    out = sums.astype(F32) * descale
    if c is not None:
        c = np.asarray(c, F32).reshape({0: (1, 1), 1: (m, 1), 2: (m, 1), 3: (m, n),
                                        4: (1, n)}[p.constant_broadcast_type_C])
    elif inputs:
        c = c_term(np.asarray(inputs.pop(0), F32), m, n)
    if c is not None:
        out = out + c * F32(p.beta)
    return np.ascontiguousarray((out * F32(p.alpha)).astype(F32))

"""Gemm with weight-only block-quantized B (gemm.cpp forward_weight_block_quantize), called by
the Gemm kernel: A is fp32 rows of K (1-D: one row; 3-D: one row per channel), B (N, K) is
unpacked from its bits and divided by its block's scale, the result is always 2-D (M, N).

8-bit weights: the pip runtime (1.0.20261020, x86) also quantizes A, per row and block, to int8 at
127 / the block's largest magnitude (rounded half away from zero, as float2int8), and sums the
products of the integers (measured: to 6e-6 of that, 0.7 from the float product). 4- and 6-bit
weights multiply float A (measured to 1e-6)."""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.gemm_block_quant import block_quantized, packed_k_bytes, quant_bits, quant_block_size, unpack
from ..registry import fail, shape_str

__all__ = ["block_quantized", "gemm_block_quantized"]
F32 = np.float32


def dequantized_b(p, packed: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """B (N, K) in float32 as ncnn computes each term: q * (1 / scale) per block."""
    n, k, block = p.constantN, p.constantK, quant_block_size(p)
    q = unpack(np.asarray(packed).reshape(n, packed_k_bytes(p)), n, k, quant_bits(p))
    descale = (F32(1) / np.asarray(scales, F32).reshape(n, -1))
    return q.astype(F32) * np.repeat(descale, block, axis=1)[:, :k]


def _int8_blocks(a: np.ndarray, block: int) -> np.ndarray:
    """A as the runtime sees it with 8-bit weights: each row's blocks quantized to int8 and back."""
    out = np.empty(a.shape, np.float64)
    for k0 in range(0, a.shape[1], block):
        part = a[:, k0:k0 + block].astype(F32)
        absmax = np.max(np.abs(part), axis=1, keepdims=True)
        scale = np.where(absmax == 0, F32(1), F32(127) / np.where(absmax == 0, F32(1), absmax)).astype(F32)
        q = np.clip(np.sign(part) * np.floor(np.abs(part * scale) + F32(0.5)), -127, 127)
        out[:, k0:k0 + block] = q / scale.astype(np.float64)
    return out


def gemm_block_quantized(p, weights, *inputs):
    if p.constantA or not p.constantB or p.transA or not p.transB or p.output_N1M or p.output_transpose:
        fail("block-quantized Gemm takes only runtime A, constant transposed B and a plain output")
    weights = list(weights)
    packed = weights.pop(0)
    c = weights.pop(0) if p.constantC and p.constant_broadcast_type_C != -1 else None
    scales = weights.pop(0)
    a = inputs[0]
    if a.ndim == 3 and a.shape[1] != 1:
        fail(f"block-quantized Gemm reads one row per channel of a 3-D A; got {shape_str(a)}")
    a = a.reshape(-1, a.shape[-1]) if a.ndim != 1 else a[None, :]
    if a.shape[1] != p.constantK:
        fail(f"block-quantized Gemm K mismatch: A {shape_str(inputs[0])}, constantK={p.constantK}")
    if weights:                               # format 1: A scaled per K first
        a = a * np.asarray(weights.pop(0), F32)
    m, n = a.shape[0], p.constantN
    if quant_bits(p) == 8:
        a = _int8_blocks(a, quant_block_size(p))
    out = (a @ dequantized_b(p, packed, scales).T).astype(F32)
    if c is not None:                         # constant C: by its broadcast type
        c = np.asarray(c, F32).reshape({0: (1, 1), 1: (m, 1), 2: (m, 1), 3: (m, n),
                                        4: (1, n)}[p.constant_broadcast_type_C])
    elif len(inputs) > 1:                     # a runtime C, matched as ncnn does (N wins over M)
        c = np.asarray(inputs[1], F32)
        kind = {(1,): (1, 1), (m,): (m, 1), (n,): (1, n), (m, 1): (m, 1), (m, n): (m, n), (1, n): (1, n)}
        if c.shape not in kind:
            fail(f"block-quantized Gemm C of shape {shape_str(c)} matches none of ncnn's forms")
        c = c.reshape(kind[c.shape])
    if c is not None:
        out = out + c * F32(p.beta)
    return np.ascontiguousarray(out * F32(p.alpha))

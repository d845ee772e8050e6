"""ncnn Gemm's weight-only block quantization (gemm.cpp, param 18=quantize_term = bits*100 +
format*10 + block code): N rows of K signed `bits`-wide integers, packed from the low bit of each
row's first byte, one scale per block of 32/64/128 values along K (weight = q / scale).

In the .bin (modelwriter.h; measured: the pip runtime reads no type tag): the packed rows untagged,
padded to 4 bytes, after C the ceil(K / block) scales of each row, and for format 1 (x0x) K input
scales A is multiplied by first.

Packing and unpacking live here so the layer spec, the MatMulNBits lowering and the interpreter
kernel share one definition.
"""
from __future__ import annotations

import numpy as np

BLOCK_SIZES = {0: 32, 1: 64, 2: 128}


def block_quantized(p) -> bool:
    """quantize_term names a weight block quantization (gemm_is_weight_block_quantize)."""
    term = int(p.quantize_term)
    return term // 100 in (4, 6, 8) and term % 100 // 10 in (0, 1) and term % 10 in BLOCK_SIZES


def int8_gemm(p) -> bool:
    """quantize_term 1..399: ncnn's int8 Gemm (gemm.cpp forward_int8): a constant A int8 with one scale
    per row, a constant B int8 with one scale; runtime operands quantized when the layer runs."""
    return 0 < int(p.quantize_term) < 400


def quant_bits(p) -> int:
    return int(p.quantize_term) // 100


def quant_block_size(p) -> int:
    return BLOCK_SIZES[int(p.quantize_term) % 10]


def packed_k_bytes(p) -> int:
    return (int(p.constantK) * quant_bits(p) + 7) // 8


def packed_b(p) -> bool:
    """The layer stores a block-quantized B (the packed bytes and their scales)."""
    return bool(p.constantB) and block_quantized(p)


def input_scaled_b(p) -> bool:
    return packed_b(p) and int(p.quantize_term) % 100 // 10 == 1


def block_scale_count(p) -> int:
    return -(-int(p.constantK) // quant_block_size(p)) * int(p.constantN)


def quantize_term(bits: int, block_size: int, input_scale: bool = False) -> int | None:
    """The 18= value for these weights, or None where ncnn has no such form."""
    codes = {v: k for k, v in BLOCK_SIZES.items()}
    if bits not in (4, 6, 8) or block_size not in codes:
        return None
    return bits * 100 + int(input_scale) * 10 + codes[block_size]


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    """(N, K) signed ints in [-2**(bits-1), 2**(bits-1)) -> (N, ceil(K*bits/8)) bytes as int8."""
    n, k = q.shape
    u = (q.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint64)
    bit = np.arange(k, dtype=np.uint64) * np.uint64(bits)
    out = np.zeros((n, (k * bits + 7) // 8 + 1), dtype=np.uint64)     # one spare byte for carries
    byte, shift = (bit // np.uint64(8)).astype(np.int64), bit % np.uint64(8)
    shifted = u << shift                                              # at most 15 bits wide
    np.add.at(out, (slice(None), byte), shifted & np.uint64(0xFF))
    np.add.at(out, (slice(None), byte + 1), shifted >> np.uint64(8))
    return out[:, :-1].astype(np.uint8).view(np.int8)


def unpack(packed: np.ndarray, n: int, k: int, bits: int) -> np.ndarray:
    """The inverse of `pack`, as ncnn reads it (sign-extended), int32 (N, K)."""
    rows = np.asarray(packed).astype(np.int8, copy=False).view(np.uint8).reshape(n, -1).astype(np.uint32)
    rows = np.concatenate([rows, np.zeros((n, 1), np.uint32)], axis=1)
    bit = np.arange(k) * bits
    byte, shift = bit // 8, (bit % 8).astype(np.uint32)
    v = ((rows[:, byte] | (rows[:, byte + 1] << 8)) >> shift) & ((1 << bits) - 1)
    sign = 1 << (bits - 1)
    return (v.astype(np.int32) ^ sign) - sign

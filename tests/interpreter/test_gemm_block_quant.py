"""Gemm with weight-only block-quantized B (18=quantize_term): the interpreter against the real
ncnn runtime, every bit width and block size, K not a multiple of the block, 1-D/2-D A, bias."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ncnn_side.gemm_block_quant import pack, quantize_term
from converter.ncnn_side.writer import weight_bytes
from converter.ir import Node

from .layer_check import check, interpret


def _weights(rng, n: int, k: int, bits: int, block: int):
    q = rng.integers(-(1 << bits - 1), 1 << bits - 1, (n, k))
    scales = rng.uniform(2.0, 40.0, (n, -(-k // block))).astype(np.float32)
    return pack(q, bits), scales, q


def _params(n: int, k: int, bits: int, block: int, c: bool = False, format1: bool = False) -> dict:
    return {3: 1, 5: 1, 6: int(c), 7: 0, 8: n, 9: k, 10: 4 if c else 0,
            18: quantize_term(bits, block, format1)}


@pytest.mark.parametrize("bits", [4, 6, 8])
@pytest.mark.parametrize("block", [32, 64, 128])
def test_block_quantized_gemm_matches_ncnn(tmp_path, bits, block):
    rng = np.random.default_rng(bits * 1000 + block)
    n, k = 24, 2 * block + 24                    # the last block is partial
    packed, scales, _ = _weights(rng, n, k, bits, block)
    a = rng.standard_normal((5, k)).astype(np.float32)
    check(tmp_path, "Gemm", _params(n, k, bits, block), [a], weights=[packed, scales])


@pytest.mark.parametrize("rows", [1, 7])
def test_block_quantized_gemm_bias_and_input_scale(tmp_path, rows):
    rng = np.random.default_rng(rows)
    n, k, bits, block = 40, 96, 4, 32
    packed, scales, _ = _weights(rng, n, k, bits, block)
    bias = rng.standard_normal(n).astype(np.float32)
    in_scale = rng.uniform(0.5, 2.0, k).astype(np.float32)
    a = rng.standard_normal((rows, k)).astype(np.float32)
    check(tmp_path, "Gemm", _params(n, k, bits, block, c=True, format1=True), [a],
          weights=[packed, bias, scales, in_scale])


def test_block_quantized_gemm_is_the_dequantized_product():
    """Independent of ncnn's code: the product equals A @ (q / scale)^T in float64."""
    rng = np.random.default_rng(5)
    n, k, bits, block = 16, 64, 4, 32
    packed, scales, q = _weights(rng, n, k, bits, block)
    a = rng.standard_normal((3, k)).astype(np.float32)
    ours = interpret("Gemm", _params(n, k, bits, block), [a], weights=[packed, scales])["out0"]
    expected = a.astype(np.float64) @ (q / np.repeat(scales.astype(np.float64), block, axis=1)).T
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_packed_weights_are_written_untagged_and_padded():
    packed = pack(np.ones((1, 33), np.int64), 8)
    node = Node("g", "Gemm", ["a"], ["y"], params=_params(1, 33, 8, 32),
                weights=[packed, np.ones((1, 2), np.float32)], ncnn=True)
    data = weight_bytes(node)
    assert data[:33] == b"\x01" * 33 and data[33:36] == b"\0" * 3 and len(data) == 36 + 8

"""InnerProduct, Gemm and MatMul with ncnn's rank rules."""
from __future__ import annotations

import numpy as np

from converter.interpreter import int8
from ..registry import fail, kernel, shape_str
from .activation import fused_activation
from .gemm_block_quant import block_quantized, gemm_block_quantized
from .gemm_int8 import gemm_int8, int8_gemm

F32 = np.float32


@kernel("InnerProduct")
def innerproduct(p, weights, x):
    num_input = p.weight_data_size // p.num_output
    if p.int8_scale_term:
        return fused_activation(_innerproduct_int8(p, weights, x, num_input), p.activation_type,
                                p.activation_params)
    w = weights[0].reshape(p.num_output, num_input)
    if x.ndim == 2 and x.shape[1] == num_input:
        out = x @ w.T                          # one output row per input row
    elif x.size == num_input:
        out = w @ x.reshape(-1)                # everything else is flattened
    else:
        fail(f"InnerProduct takes {num_input} inputs, got shape {shape_str(x)}")
    if p.bias_term:
        out = out + weights[1]
    return fused_activation(out, p.activation_type, p.activation_params)


def _innerproduct_int8(p, weights, x, num_input: int) -> np.ndarray:
    """ncnn's forward_int8: x quantized with the bottom scale, int32 sums, scaled back per output."""
    w, bias, scale_in, bottom = int8.int8_scales(p, weights, p.num_output)
    w = w.reshape(p.num_output, num_input)
    if x.ndim == 2 and x.shape[1] == num_input:
        return int8.dequantize(w @ int8.float2int8(x, bottom).T, scale_in, bias).T
    if x.size != num_input:
        fail(f"InnerProduct takes {num_input} inputs, got shape {shape_str(x)}")
    return int8.dequantize(w @ int8.float2int8(x.reshape(-1), bottom), scale_in, bias)


# ---- Gemm ----------------------------------------------------------------------

def _matrix(x: np.ndarray, what: str) -> np.ndarray:
    """Gemm reads a 1-D blob as one row and a 3-D blob (rows, 1, cols) as rows of channels."""
    if x.ndim == 1:
        return x[None, :]
    if x.ndim == 2:
        return x
    if x.ndim == 3 and x.shape[1] == 1:
        return x[:, 0, :]
    fail(f"Gemm {what} must be 1-D, 2-D or (rows,1,cols), got {shape_str(x)}")


def _c_term(c: np.ndarray, m: int, n: int) -> np.ndarray:
    """A runtime C blob broadcast the way ncnn matches it (later rules win, like ncnn)."""
    kind = None
    if c.ndim == 1:
        kind = {1: "scalar"}.get(c.shape[0])
        kind = "rows" if c.shape[0] == m else kind
        kind = "cols" if c.shape[0] == n else kind
    elif c.ndim == 2:
        kind = {(m, 1): "rows", (m, n): "full", (1, n): "cols"}.get(c.shape)
    if kind is None:
        fail(f"Gemm C of shape {shape_str(c)} matches none of ncnn's forms for M={m}, N={n}")
    return c.reshape({"scalar": (1, 1), "rows": (m, 1), "cols": (1, n), "full": (m, n)}[kind])


def _constant_c(p, data: np.ndarray, m: int, n: int) -> np.ndarray:
    shapes = {0: (1, 1), 1: (m, 1), 2: (m, 1), 3: (m, n), 4: (1, n)}
    return data.reshape(shapes[p.constant_broadcast_type_C])


@kernel("Gemm")
def gemm(p, weights, *inputs):
    if block_quantized(p):
        return gemm_block_quantized(p, weights, *inputs)
    if int8_gemm(p):
        return gemm_int8(p, weights, inputs, _c_term, _matrix)
    weights, inputs = list(weights), list(inputs)
    if p.constantA:
        k_m = (p.constantK, p.constantM) if p.transA else (p.constantM, p.constantK)
        a0 = weights.pop(0).reshape(k_m)
    else:
        a0 = _matrix(inputs.pop(0), "A")
    if p.constantB:
        n_k = (p.constantN, p.constantK) if p.transB else (p.constantK, p.constantN)
        b0 = weights.pop(0).reshape(n_k)
    else:
        b0 = _matrix(inputs.pop(0), "B")
    a = a0.T if p.transA else a0
    b = b0.T if p.transB else b0
    if a.shape[1] != b.shape[0]:
        fail(f"Gemm A is {a.shape[0]}x{a.shape[1]} but B is {b.shape[0]}x{b.shape[1]}")
    m, n = a.shape[0], b.shape[1]
    out = a @ b
    c = None
    if p.constantC and p.constant_broadcast_type_C != -1:
        c = _constant_c(p, weights.pop(0), m, n)
    elif not p.constantC and inputs:
        c = _c_term(inputs.pop(0), m, n)
    if c is not None:
        out = out + c * F32(p.beta)
    out = out * F32(p.alpha)                  # ncnn: alpha * (A*B + beta*C)
    if p.output_transpose:
        out = out.T
    if p.output_N1M:
        out = out.reshape(out.shape[0], 1, out.shape[1])
    return np.ascontiguousarray(out)


# ---- MatMul ---------------------------------------------------------------------

def _batch_broadcast(a: np.ndarray, b: np.ndarray) -> None:
    for ea, eb in zip(a.shape[:-2], b.shape[:-2]):
        if ea != eb and ea != 1 and eb != 1:
            fail(f"MatMul batch extents of {shape_str(a)} and {shape_str(b)} do not broadcast; "
                 f"ncnn would read out of range")


@kernel("MatMul")
def matmul(p, weights, a, b):
    bt = b.swapaxes(-1, -2) if p.transB and b.ndim >= 2 else b    # bt: (..., K, N)
    k_a = a.shape[-1]
    k_b = bt.shape[-2] if bt.ndim >= 2 else bt.shape[0]
    if k_a != k_b:
        fail(f"MatMul inner extents differ: A {shape_str(a)}, B {shape_str(b)}, transB={p.transB}")
    if a.ndim == 1 and b.ndim == 1:
        return np.dot(a, b).reshape(1)
    if b.ndim == 1:                           # (..., M, K) x (K) -> (..., M); 3-D/4-D A keep c,d
        return a @ b
    if a.ndim == 1:                           # (K) x (..., K, N) -> (..., N)
        return (a @ bt).reshape(bt.shape[:-2] + (bt.shape[-1],))
    rank = max(a.ndim, bt.ndim)
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    bt = bt.reshape((1,) * (rank - bt.ndim) + bt.shape)
    _batch_broadcast(a, bt)
    return np.matmul(a, bt)

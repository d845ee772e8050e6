"""A per-output-channel affine s * y + t folded into the Conv or Gemm that computes y: new weight and bias
constants, or None when the producer is not a plain one (its lowering then says what is wrong)."""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node


def fold_into_conv(graph: Graph, conv: Node, s: np.ndarray, t: np.ndarray) -> list[str] | None:
    weight = graph.value(conv.inputs[1])
    bias = graph.value(conv.inputs[2]) if len(conv.inputs) > 2 and conv.inputs[2] else None
    if weight is None or (len(conv.inputs) > 2 and conv.inputs[2] and bias is None) \
            or weight.shape[0] != len(s) or (bias is not None and bias.size not in (1, len(s))) \
            or len(conv.inputs) > 3:
        return None            # not a plain conv: its lowering says what is wrong
    b = np.zeros(len(s)) if bias is None else bias.astype(np.float64)
    w = weight.astype(np.float64) * s.reshape((-1,) + (1,) * (weight.ndim - 1))
    return [conv.inputs[0], graph.add_constant(f"{conv.inputs[1]}_bn", w.astype(weight.dtype)).name,
            graph.add_constant(f"{conv.name}_bias_bn", (b * s + t).astype(weight.dtype)).name]


def fold_into_gemm(graph: Graph, gemm: Node, s: np.ndarray, t: np.ndarray) -> list[str] | None:
    b = graph.value(gemm.inputs[1])
    has_c = len(gemm.inputs) > 2 and bool(gemm.inputs[2])
    c = graph.value(gemm.inputs[2]) if has_c else None
    if b is None or (has_c and c is None) or gemm.attrs["transA"]:
        return None
    trans_b = gemm.attrs["transB"]
    if (b.shape[0] if trans_b else b.shape[1]) != len(s):
        return None
    b_new = b.astype(np.float64) * (s[:, None] if trans_b else s[None, :])
    # beta * C' = s * (beta * C) + t; C' is stored with beta folded in, and beta set to 1
    beta = float(gemm.attrs["beta"])
    c_new = t if c is None else s * beta * c.astype(np.float64) + t
    gemm.attrs["beta"] = 1.0
    return [gemm.inputs[0], graph.add_constant(f"{gemm.inputs[1]}_bn", b_new.astype(b.dtype)).name,
            graph.add_constant(f"{gemm.name}_c_bn", c_new.astype(b.dtype)).name]

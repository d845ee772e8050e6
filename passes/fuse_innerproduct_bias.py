"""Fold a constant Add after a bias-less InnerProduct into the InnerProduct's bias.

ONNX exporters write a linear layer as MatMul + Add(bias), which lowers to an
InnerProduct without bias and a BinaryOp reading a constant. When the
constant holds one value per output column (shape (..., 1, num_output)) and
broadcasting leaves the product's shape unchanged, the sum is exactly what
InnerProduct's own bias computes: one layer and one constant blob less, in
ncnn and in the interpreter. The product must be read only by the Add and
must not be a graph output. One walk over the BinaryOp layers.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.layers import BINARY_OPS, SPECS


def _column_bias(graph: Graph, product: Node | None, const: Tensor, add: Node) -> np.ndarray | None:
    """The bias vector if `product + const` is `product` with a bias per output column."""
    if product is None or product.op != "InnerProduct" or not const.is_constant:
        return None
    p = SPECS["InnerProduct"].resolve(product.params)
    if p.bias_term or p.activation_type or p.int8_scale_term or graph.use_count(product.outputs[0]) != 1:
        return None
    before, after = graph.tensors[product.outputs[0]].shape, graph.tensors[add.outputs[0]].shape
    value = const.value
    if (before is None or before != after or not before or before[-1] != p.num_output
            or value.dtype != np.float32 or value.size != p.num_output or value.ndim > len(before)
            or any(d != 1 for d in value.shape[:-1])):
        return None
    return value.reshape(-1)


def fuse_innerproduct_bias(graph: Graph) -> dict:
    fused = 0
    for add in [n for n in graph.topological() if n.ncnn and n.op == "BinaryOp" and len(n.inputs) == 2]:
        p = SPECS["BinaryOp"].resolve(add.params)
        if p.op_type != BINARY_OPS["add"] or p.with_scalar:
            continue
        for slot in (0, 1):
            product = graph.producer(add.inputs[slot])
            bias = _column_bias(graph, product, graph.tensors[add.inputs[1 - slot]], add)
            if bias is not None:
                break
        else:
            continue
        params = dict(product.params)
        params[1] = 1                                  # bias_term
        graph.fold_into_producer(product, add, params=params, weights=[product.weights[0], bias])
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"biases_fused": fused}

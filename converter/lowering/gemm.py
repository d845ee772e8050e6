"""Gemm -> ncnn InnerProduct (constant B) or MatMul, with C added."""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import fail, layer, new_tensor, require_float, target_params
from .elementwise import binary


@lowers("Gemm")
def gemm(graph: Graph, node: Node) -> list[Node]:
    """alpha * A @ B' + beta * C: constant B -> InnerProduct (alpha folded into the weight, a
    per-column C as its bias); run-time B -> MatMul; other C -> one add after it."""
    require_float(graph, node, node.inputs)
    a = graph.tensors[node.inputs[0]]
    alpha, beta = float(node.attrs["alpha"]), float(node.attrs["beta"])
    trans_b = int(node.attrs["transB"])
    if a.rank != 2 or a.batch_axis not in (0, None):
        raise fail(node, graph, f"A must be a matrix with the batch (if any) on axis 0, got "
                                f"{a.shape} with batch axis {a.batch_axis}")
    out = graph.tensors[node.outputs[0]]
    pre: list[Node] = []
    if node.attrs["transA"]:
        a, pre = _transposed(graph, node, a, out.batch_axis)
    c_name = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] and beta != 0.0 else None
    c_value = graph.value(c_name) if c_name else None
    b_value = graph.value(node.inputs[1])
    if b_value is not None:
        weight = (b_value if trans_b else b_value.T).astype(np.float64) * alpha     # (N, K)
        n = weight.shape[0]
        params = {0: n, 2: int(weight.size)}
        if c_name is None:
            return pre + [layer(node, graph, "InnerProduct", [a.name], [out.name], params, [weight])]
        if c_value is not None and (c_value.size == 1 or c_value.size == n and c_value.shape[-1] == n):
            params[1] = 1     # one value per output column: InnerProduct's bias
            bias = np.broadcast_to(beta * c_value.astype(np.float64).reshape(-1), (n,))
            return pre + [layer(node, graph, "InnerProduct", [a.name], [out.name], params,
                                [weight, bias])]
        product = new_tensor(graph, f"{out.name}_ab", out.shape, out.batch_axis)
        nodes = pre + [layer(node, graph, "InnerProduct", [a.name], [product], params, [weight])]
    else:
        b = graph.tensors[node.inputs[1]]
        if b.rank != 2 or b.batch_axis is not None:
            raise fail(node, graph, f"a run-time B must be a matrix without batch axis, got {b.shape} "
                                    f"with batch axis {b.batch_axis}")
        product = out.name if alpha == 1.0 and c_name is None else \
            new_tensor(graph, f"{out.name}_ab", out.shape, out.batch_axis)
        nodes = pre + [layer(node, graph, "MatMul", [a.name, b.name], [product], {0: trans_b})]
        if alpha != 1.0:
            scaled = out.name if c_name is None else \
                new_tensor(graph, f"{out.name}_alpha", out.shape, out.batch_axis)
            nodes.append(layer(node, graph, "BinaryOp", [product], [scaled],
                               {0: BINARY_OPS["mul"], 1: 1, 2: alpha}, suffix="_alpha"))
            product = scaled
        if c_name is None:
            return nodes
    return nodes + _add_scaled_c(graph, node, product, c_name, beta, out.name)


def _transposed(graph: Graph, node: Node, a: Tensor, batch_axis: int | None) -> tuple[Tensor, list[Node]]:
    """A.T for transA=1, as a tensor with the output's batch axis (0 only when A.T is 1 x K)."""
    k, m = a.shape
    if a.is_constant:
        return graph.tensors[graph.add_constant(f"{a.name}_t", a.value.T).name], []
    t = graph.tensors[new_tensor(graph, f"{a.name}_t", (m, k), batch_axis)]
    if a.ncnn_shape == t.ncnn_shape and (k == 1 or m == 1):
        return t, [layer(node, graph, "Noop", [a.name], [t.name], suffix="_transA")]
    if k == 1 or m == 1:      # the values keep their order: only the shape changes
        return t, [layer(node, graph, "Reshape", [a.name], [t.name],
                         target_params(graph, node, t.ncnn_shape), suffix="_transA")]
    if len(a.ncnn_shape) != 2:
        raise fail(node, graph, f"transA=1 on A {list(a.shape)} with batch axis {a.batch_axis}")
    return t, [layer(node, graph, "Permute", [a.name], [t.name], {0: 1}, suffix="_transA")]


def _add_scaled_c(graph: Graph, node: Node, product: str, c_name: str, beta: float,
                  out: str) -> list[Node]:
    """product + beta * C; a constant C is scaled at conversion time."""
    nodes, c = [], graph.tensors[c_name]
    if c.is_constant:
        c_name = graph.add_constant(f"{node.name}_c", (beta * c.value.astype(np.float64))
                                    .astype(np.float32)).name
    elif beta != 1.0:
        scaled = new_tensor(graph, f"{c_name}_beta", c.shape, c.batch_axis)
        nodes.append(layer(node, graph, "BinaryOp", [c_name], [scaled],
                           {0: BINARY_OPS["mul"], 1: 1, 2: beta}, suffix="_beta"))
        c_name = scaled
    return nodes + [binary(graph, node, product, c_name, BINARY_OPS["add"], out, suffix="_addc")]



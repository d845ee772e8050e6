"""Fold a per-column constant scale after a projection into the projection's constants.

    Mul(Add(MatMul(x, W), b), g)  ->  Add(MatMul(x, W * g), b * g)      (or without the Add)

with W a constant (K, N) matrix, b and g constants of N values on the last axis (g of leading
extent 1 otherwise: it scales columns, never broadcasts x). (x W + b) g and x (W g) + b g are the
same sum up to float rounding. timm's LayerScale (`x * gamma` after the attention's output
projection and after the MLP) is this: pnnx and an unfolded lowering run it as a BinaryOp reading a
MemoryData (cloned on every run) after the Gemm. A scalar g is left alone (fuse_attention reads a
scalar scale on q as the attention's scale). The MatMul and Add outputs must be read only inside
the pattern, the Mul's must not be a graph output. One walk over the Mul nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node


def _only_reader(graph: Graph, tensor: str) -> bool:
    return graph.use_count(tensor) == 1 and tensor not in graph.outputs


def _column_constant(graph: Graph, name: str, n: int) -> np.ndarray | None:
    """The N values of a float constant laid along the last axis (leading extents 1), or None."""
    value = graph.value(name) if name else None
    if value is None or value.dtype != np.float32 or value.size != n or n < 2:
        return None
    if value.ndim == 0 or value.shape[-1] != n:
        return None
    return value.reshape(n)


def _projection(graph: Graph, name: str) -> tuple[Node, Node | None, np.ndarray, np.ndarray | None] | None:
    """(MatMul, Add or None, W, b or None) producing `name`, or None."""
    node = graph.producer(name)
    add = None
    if node is not None and node.op == "Add" and not node.ncnn and len(node.inputs) == 2:
        add = node
        computed = [i for i in add.inputs if graph.value(i) is None]
        if len(computed) != 1 or not _only_reader(graph, computed[0]):
            return None
        node = graph.producer(computed[0])
    if node is None or node.op != "MatMul" or node.ncnn or len(node.inputs) != 2:
        return None
    w = graph.value(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype != np.float32 or graph.value(node.inputs[0]) is not None:
        return None
    if add is None:
        return node, None, w, None
    bias_name = next(i for i in add.inputs if graph.value(i) is not None)
    b = _column_constant(graph, bias_name, w.shape[1])
    return (node, add, w, b) if b is not None else None


def fold_scale_into_matmul(graph: Graph) -> dict:
    folded = 0
    for mul in graph.topological():
        if mul.op != "Mul" or mul.ncnn or len(mul.inputs) != 2 or mul.outputs[0] in graph.outputs:
            continue
        computed = [i for i in mul.inputs if graph.value(i) is None]
        if len(computed) != 1 or not _only_reader(graph, computed[0]):
            continue
        found = _projection(graph, computed[0])
        if found is None:
            continue
        matmul, add, w, b = found
        scale_name = next(i for i in mul.inputs if graph.value(i) is not None)
        g = _column_constant(graph, scale_name, w.shape[1])
        x_shape = graph.tensors[computed[0]].shape
        if g is None or x_shape is None or graph.value(scale_name).ndim > len(x_shape):
            continue
        w_name = graph.add_constant(f"{matmul.inputs[1]}_scaled", (w * g).astype(np.float32)).name
        graph.set_inputs(matmul, [matmul.inputs[0], w_name])
        if add is not None:
            slot = next(s for s, i in enumerate(add.inputs) if graph.value(i) is not None)
            bias = graph.value(add.inputs[slot])
            scaled = (bias.reshape(-1) * g).astype(np.float32).reshape(bias.shape)
            graph.replace_input(add, slot, graph.add_constant(f"{add.inputs[slot]}_scaled", scaled).name)
        graph.remove_node(mul)
        graph.replace_all_uses(mul.outputs[0], computed[0])
        folded += 1
    if folded:
        graph.remove_unused_tensors()
    return {"scales_folded": folded}

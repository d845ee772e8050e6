"""Fold a per-column constant scale after a projection into the projection's constants.

    Mul(Add(MatMul(x, W), b), g)  ->  Add(MatMul(x, W * g), b * g)      (or without the Add)

with W a constant (K, N) matrix, b and g constants of N values on the last axis (g of leading
extent 1 otherwise: it scales columns, never broadcasts x). (x W + b) g and x (W g) + b g are the
same sum up to float rounding. timm's LayerScale (`x * gamma` after the attention's output
projection and after the MLP) is this: pnnx and an unfolded lowering run it as a BinaryOp reading a
MemoryData (cloned on every run) after the Gemm. A scalar g is left alone (fuse_attention reads a
scalar scale on q as the attention's scale). The MatMul and Add outputs must be read only inside
the pattern, the Mul's must not be a graph output. One walk over the Mul nodes
(converter/rewrite/driver.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule


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


def _match(graph: Graph, mul: Node) -> Match:
    need(len(mul.inputs) == 2 and mul.outputs[0] not in graph.outputs, "a graph output, or not two operands")
    computed = [i for i in mul.inputs if graph.value(i) is None]
    need(len(computed) == 1, "not one computed operand and one constant")
    need(_only_reader(graph, computed[0]), "the computed operand is read elsewhere too")
    found = _projection(graph, computed[0])
    need(found is not None, "the computed operand is not MatMul(x, W) [+ b], W a float32 matrix, b per column")
    matmul, add, w, b = found
    scale_name = next(i for i in mul.inputs if graph.value(i) is not None)
    g = _column_constant(graph, scale_name, w.shape[1])
    x_shape = graph.tensors[computed[0]].shape
    need(g is not None and x_shape is not None and graph.value(scale_name).ndim <= len(x_shape),
         f"the constant is not {w.shape[1]} float32 values along the last axis")
    return Match([mul], matmul=matmul, add=add, w=w, g=g, computed=computed[0], out=mul.outputs[0])


def _build(graph: Graph, m: Match) -> None:
    w_name = graph.add_constant(f"{m.matmul.inputs[1]}_scaled", (m.w * m.g).astype(np.float32)).name
    graph.set_inputs(m.matmul, [m.matmul.inputs[0], w_name])
    if m.add is not None:
        slot = next(s for s, i in enumerate(m.add.inputs) if graph.value(i) is not None)
        bias = graph.value(m.add.inputs[slot])
        scaled = (bias.reshape(-1) * m.g).astype(np.float32).reshape(bias.shape)
        graph.replace_input(m.add, slot, graph.add_constant(f"{m.add.inputs[slot]}_scaled", scaled).name)
    graph.replace_all_uses(m.out, m.computed)       # the Mul itself goes when build returns


RULE = rule("fold_scale_into_matmul", "scales_folded", "Mul", _match, _build)


def fold_scale_into_matmul(graph: Graph) -> dict:
    return apply(graph, RULE)

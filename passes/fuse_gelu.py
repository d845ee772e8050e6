"""Fuse the exported erf form of GELU into one ONNX Gelu node (lowered to ncnn GELU, fast_gelu 0).

    x * 0.5 * (1 + Erf(x / sqrt(2)))

in the arrangements exporters emit: x / sqrt(2) or x * (1 / sqrt(2)) into the
Erf; Erf + 1 (either operand order); the 0.5 applied last ((x * t) * 0.5), to x
first ((x * 0.5) * t) or to the sum (x * (t * 0.5)); any operand order of each
Mul. One walk from each Erf; a match fuses only when every intermediate
tensor has no other reader and is not a graph output, and the constants are
one-element values.
"""
from __future__ import annotations

import math

import numpy as np

from converter.ir import Graph, Node

SQRT2 = math.sqrt(2.0)


def _const(graph: Graph, name: str, want: float) -> bool:
    value = graph.value(name)
    return value is not None and value.size == 1 and value.dtype.kind == "f" and bool(
        np.isclose(float(value.reshape(-1)[0]), want, rtol=1e-6, atol=0.0))


def _other(node: Node, name: str) -> str | None:
    """The other operand of a two-input node that reads `name` once."""
    if len(node.inputs) != 2 or node.inputs.count(name) != 1:
        return None
    return node.inputs[1 - node.inputs.index(name)]


def _sole_reader(graph: Graph, name: str, op: str) -> Node | None:
    """The only reader of `name`, if it is an `op` node and `name` is not a graph output."""
    readers = graph.consumers(name)
    if graph.use_count(name) != 1 or len(readers) != 1 or readers[0].op != op:
        return None
    return readers[0]


def _scaled_input(graph: Graph, node: Node) -> str | None:
    """x for node = x / sqrt(2) or x * (1 / sqrt(2)) (either order for Mul)."""
    if node.op == "Div" and len(node.inputs) == 2 and _const(graph, node.inputs[1], SQRT2):
        return node.inputs[0]
    if node.op == "Mul" and len(node.inputs) == 2:
        for x, c in (node.inputs, node.inputs[::-1]):
            if _const(graph, c, 1 / SQRT2):
                return x
    return None


def _match(graph: Graph, erf: Node) -> tuple[str, list[Node]] | None:
    """(x, nodes to replace, the last one producing the GELU output) for the pattern through `erf`."""
    pre = graph.producer(erf.inputs[0])
    x = None if pre is None else _scaled_input(graph, pre)
    if x is None or graph.use_count(pre.outputs[0]) != 1:
        return None
    add = _sole_reader(graph, erf.outputs[0], "Add")
    if add is None or not _const(graph, _other(add, erf.outputs[0]) or "", 1.0):
        return None
    mul = _sole_reader(graph, add.outputs[0], "Mul")
    if mul is None:
        return None
    other = _other(mul, add.outputs[0])
    if other == x:                                                   # (x * t) * 0.5
        half = _sole_reader(graph, mul.outputs[0], "Mul")
        if half is None or not _const(graph, _other(half, mul.outputs[0]) or "", 0.5):
            return None
        return x, [pre, erf, add, mul, half]
    if other is not None and _const(graph, other, 0.5):               # x * (t * 0.5)
        last = _sole_reader(graph, mul.outputs[0], "Mul")
        if last is None or _other(last, mul.outputs[0]) != x:
            return None
        return x, [pre, erf, add, mul, last]
    half_x = None if other is None else graph.producer(other)        # (x * 0.5) * t
    if (half_x is not None and half_x.op == "Mul" and graph.use_count(other) == 1
            and _other(half_x, x) is not None and _const(graph, _other(half_x, x), 0.5)):
        return x, [half_x, pre, erf, add, mul]
    return None


def fuse_gelu(graph: Graph) -> dict:
    fused = 0
    for erf in graph.onnx_nodes_of("Erf"):
        found = _match(graph, erf)
        if found is None:
            continue
        x, nodes = found
        out = nodes[-1].outputs[0]
        if graph.tensors[out].shape != graph.tensors[x].shape:
            continue        # a constant broadcast the result to a bigger shape
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(Node(graph.fresh_name(f"{erf.name}_gelu"), "Gelu", [x], [out],
                            {"approximate": "none"}, origin=erf.origin or erf.name))
        fused += 1
    return {"gelu_fused": fused}

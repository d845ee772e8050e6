"""Comparisons and boolean logic (attention-mask arithmetic) -> ncnn BinaryOp / UnaryOp on 0/1 floats.

ncnn has no boolean blobs: a bool tensor travels as float 0/1 (a bool graph input is fed so).
On those, and on integers (exact in float32 up to 2**24), these forms are exact:

    Not(x)        = 1 - x                    And(a, b) = a * b      Or(a, b) = max(a, b)
    Xor(a, b)     = |a - b|                  Equal(a, b) = 1 - sign(|a - b|)
    Less(a, b)    = relu(sign(b - a))        (Greater, LessOrEqual, GreaterOrEqual alike)
    Where(c, a, b) = c * a + (1 - c) * b     (a term whose constant is 0 is left out)

Float operands compare exactly too, but for values closer than 2**-126 (ncnn flushes
denormal differences to zero). Where is exact for finite a and b: 0 * inf is NaN, so a
constant operand holding inf or NaN is refused (use a large finite value, as exporters of
`finfo.min` masks do).
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS
from converter.shapes.arithmetic import broadcast_shapes

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, new_tensor
from .elementwise import binary, partial_result
from .masked_fill import masked_fill


def _finite_constants(graph: Graph, node: Node) -> None:
    for name in filter(None, node.inputs):
        if graph.tensors[name].dtype.kind not in "biuf":
            raise fail(node, graph, f"'{name}' is {graph.tensors[name].dtype}; ncnn holds numbers only")
        value = graph.value(name)
        if value is not None and value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise fail(node, graph, f"constant '{name}' holds inf or NaN; the 0/1 arithmetic ncnn computes "
                                    "this with turns 0 * inf into NaN")
        if value is not None and value.dtype.kind in "iu" and np.any(np.abs(value.astype(np.float64)) > 2 ** 24):
            raise fail(node, graph, f"constant '{name}' holds integers beyond 2**24, inexact in float32")


def _unary(graph: Graph, src: Node, x: str, op: str, out: str | None = None) -> tuple[Node, str]:
    t = graph.tensors[x]
    out = out or new_tensor(graph, f"{src.outputs[0]}_{op}", t.shape, t.batch_axis)
    return layer(src, graph, "UnaryOp", [x], [out], {0: UNARY_OPS[op]}, suffix=f"_{op}"), out


def _scalar_op(graph: Graph, src: Node, x: str, op: str, b: float, out: str | None = None) -> tuple[Node, str]:
    """op(x, b) for a float b, keeping x's shape."""
    t = graph.tensors[x]
    out = out or new_tensor(graph, f"{src.outputs[0]}_{op}", t.shape, t.batch_axis)
    return layer(src, graph, "BinaryOp", [x], [out], {0: BINARY_OPS[op], 1: 1, 2: float(b)}, suffix=f"_{op}"), out


def _pair(graph: Graph, src: Node, a: str, b: str, op: str, out: str | None = None,
          tag: str = "") -> tuple[Node, str]:
    out = out or partial_result(graph, src, [a, b])
    return binary(graph, src, a, b, BINARY_OPS[op], out, suffix=f"_{op}{tag}"), out


@lowers("Not")
def not_(graph: Graph, node: Node) -> list[Node]:
    return [_scalar_op(graph, node, node.inputs[0], "rsub", 1.0, node.outputs[0])[0]]


@lowers("And", "Or", "Xor")
def and_or(graph: Graph, node: Node) -> list[Node]:
    a, b, out = node.inputs[0], node.inputs[1], node.outputs[0]
    if node.op == "Xor":
        diff, d = _pair(graph, node, a, b, "sub")
        return [diff, _unary(graph, node, d, "abs", out)[0]]
    return [_pair(graph, node, a, b, "mul" if node.op == "And" else "max", out)[0]]


@lowers("Equal")
def equal(graph: Graph, node: Node) -> list[Node]:
    _finite_constants(graph, node)
    diff, d = _pair(graph, node, node.inputs[0], node.inputs[1], "sub")
    magnitude, m = _unary(graph, node, d, "abs")
    differs, s = _unary(graph, node, m, "sign")
    return [diff, magnitude, differs, _scalar_op(graph, node, s, "rsub", 1.0, node.outputs[0])[0]]


# op -> (operand order of the difference, whether equality counts): Less(a, b) = sign(b - a) > 0
COMPARISONS = {"Less": (1, False), "Greater": (0, False), "LessOrEqual": (0, True), "GreaterOrEqual": (1, True)}


@lowers(*COMPARISONS)
def compare(graph: Graph, node: Node) -> list[Node]:
    _finite_constants(graph, node)
    first, or_equal = COMPARISONS[node.op]
    a, b = node.inputs[first], node.inputs[1 - first]
    diff, d = _pair(graph, node, a, b, "sub")
    signed, s = _unary(graph, node, d, "sign")
    if not or_equal:        # sign(first - second) > 0
        return [diff, signed, layer(node, graph, "ReLU", [s], node.outputs[:1], suffix="_positive")]
    # not (first > second): first and second were swapped above so this is the op asked for
    positive = new_tensor(graph, f"{node.outputs[0]}_gt", graph.tensors[s].shape, graph.tensors[s].batch_axis)
    return [diff, signed, layer(node, graph, "ReLU", [s], [positive], suffix="_positive"),
            _scalar_op(graph, node, positive, "rsub", 1.0, node.outputs[0])[0]]


def _is_zero(graph: Graph, name: str) -> bool:
    value = graph.value(name)
    return value is not None and not np.any(value)


def _term_is_all(graph: Graph, node: Node, operands: list[str]) -> bool:
    """The product of these operands already has the output's shape (the other term is 0)."""
    shapes = [graph.tensors[o].shape for o in operands]
    return None not in shapes and broadcast_shapes(*shapes) == graph.tensors[node.outputs[0]].shape


@lowers("Where")
def where(graph: Graph, node: Node) -> list[Node]:
    inf_fill = masked_fill(graph, node, where)     # a constant +-inf branch: added, never multiplied
    if inf_fill is not None:
        return inf_fill
    _finite_constants(graph, node)
    c, a, b = node.inputs[:3]
    out = node.outputs[0]
    use_a, use_b = not _is_zero(graph, a), not _is_zero(graph, b)
    if not use_b and not _term_is_all(graph, node, [c, a]):
        use_b = True
    if not use_a and not _term_is_all(graph, node, [c, b]):
        use_a = True
    layers = []
    if use_a:
        picked_a, ta = _pair(graph, node, c, a, "mul", None if use_b else out, tag="_a")
        layers.append(picked_a)
    if use_b:
        inverse, nc = _scalar_op(graph, node, c, "rsub", 1.0)
        picked_b, tb = _pair(graph, node, nc, b, "mul", None if use_a else out, tag="_b")
        layers += [inverse, picked_b]
    if use_a and use_b:
        layers.append(_pair(graph, node, ta, tb, "add", out)[0])
    return layers

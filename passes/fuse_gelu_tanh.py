"""Fuse the tanh approximation of GELU into one ONNX Gelu node (approximate "tanh", lowered to ncnn
GELU with fast_gelu 1, which computes exactly this formula):

    0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))

as torch exports nn.GELU(approximate="tanh") and HF's gelu_new: x^3 as Pow(x, 3) or x * x * x;
the constants on either side of each Mul and Add; the 0.5 applied to x first, to the product or
to the sum. fuse_gelu handles the erf form. One walk over the Tanh nodes
(converter/rewrite/driver.py); every intermediate tensor must have no other reader and not be a
graph output.
"""
from __future__ import annotations

import math

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, Miss, apply, need, rule
from converter.rewrite.patterns import expect_scalar, near, other, scalar, sole_reader, times

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _is(graph: Graph, name: str | None, want: float) -> bool:
    return name is not None and near(scalar(graph, name), want, rtol=1e-5)


def _scaled(graph: Graph, node: Node | None, want: float) -> str | None:
    """x for node = x * want (either order)."""
    return times(graph, node, want, rtol=1e-5)


def _single(graph: Graph, name: str) -> Node | None:
    """The producer of `name` if `name` is read once and is not a graph output."""
    node = graph.producer(name)
    return node if node is not None and not node.ncnn and graph.use_count(name) == 1 else None


def _cube_nodes(graph: Graph, name: str, x: str) -> list[Node] | None:
    """The nodes of name = x^3: Pow(x, 3), (x * x) * x or x * (x * x)."""
    node = _single(graph, name)
    if node is None:
        return None
    if node.op == "Pow" and node.inputs[0] == x and _is(graph, node.inputs[1], 3.0):
        return [node]
    if node.op == "Mul" and node.inputs.count(x) == 1:
        square = _single(graph, other(node, x))
        if square is not None and square.op == "Mul" and square.inputs == [x, x]:
            return [square, node]
    return None


def _inner(graph: Graph, tanh: Node) -> tuple[str, list[Node]]:
    """(x, nodes) for Tanh's input = sqrt(2/pi) * (x + 0.044715 * x^3)."""
    outer = _single(graph, tanh.inputs[0])
    total = _scaled(graph, outer, SQRT_2_OVER_PI)
    need(total is not None, "Tanh's input is not sqrt(2/pi) * (...), read only by the Tanh")
    add = _single(graph, total)
    need(add is not None and add.op == "Add" and len(add.inputs) == 2, "sqrt(2/pi) scales no Add")
    for x, term in (add.inputs, add.inputs[::-1]):
        mul = _single(graph, term)
        cube = _scaled(graph, mul, 0.044715)
        cube_nodes = None if cube is None else _cube_nodes(graph, cube, x)
        if cube_nodes is not None:
            return x, [*cube_nodes, mul, add, outer]
    raise Miss("the Add inside Tanh is not x + 0.044715 * x^3")


def _outer(graph: Graph, tanh: Node, x: str) -> list[Node]:
    """The nodes computing 0.5 * x * (1 + t) from t = Tanh(...), the last one writing the result."""
    add = sole_reader(graph, tanh.outputs[0], "Add")
    need(add is not None, "Tanh's output is not read by one Add only")
    expect_scalar(graph, other(add, tanh.outputs[0]), 1.0, "the Add after Tanh's other operand", rtol=1e-5)
    mul = sole_reader(graph, add.outputs[0], "Mul")
    rest = None if mul is None else other(mul, add.outputs[0])
    need(rest is not None, "1 + Tanh(...) is not read by one Mul only")
    if rest == x:                                                   # (x * s) * 0.5
        half = sole_reader(graph, mul.outputs[0], "Mul")
        need(half is not None, "x * (1 + Tanh(...)) is not read by one Mul only")
        expect_scalar(graph, other(half, mul.outputs[0]), 0.5, "the last Mul's other operand", rtol=1e-5)
        return [add, mul, half]
    if _is(graph, rest, 0.5):                                       # x * (s * 0.5)
        last = sole_reader(graph, mul.outputs[0], "Mul")
        need(last is not None and other(last, mul.outputs[0]) == x,
             "(1 + Tanh(...)) * 0.5 is not multiplied by the x Tanh reads")
        return [add, mul, last]
    half_x = _single(graph, rest)                                   # (x * 0.5) * s
    need(half_x is not None and _scaled(graph, half_x, 0.5) == x, "1 + Tanh(...) is multiplied by neither x, 0.5 "
         "nor x * 0.5")
    return [half_x, add, mul]


def _match(graph: Graph, tanh: Node) -> Match:
    x, inner = _inner(graph, tanh)
    outer = _outer(graph, tanh, x)
    out = _last(graph, outer)
    need(graph.tensors[out].shape == graph.tensors[x].shape, "a constant broadcasts the result to a bigger shape")
    need(graph.tensors[x].dtype == np.float32, f"x is {graph.tensors[x].dtype}, not float32")
    return Match([*inner, tanh, *outer], x=x, out=out, tanh=tanh)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [Node(graph.fresh_name(f"{m.tanh.name}_gelu"), "Gelu", [m.x], [m.out], {"approximate": "tanh"},
                 origin=m.tanh.origin or m.tanh.name)]


def _last(graph: Graph, nodes: list[Node]) -> str:
    """The output of `nodes` that no node among them reads."""
    read = {i for n in nodes for i in n.inputs}
    return next(o for n in nodes for o in n.outputs if o not in read)


RULE = rule("fuse_gelu_tanh", "gelu_tanh_fused", "Tanh", _match, _build)


def fuse_gelu_tanh(graph: Graph) -> dict:
    return apply(graph, RULE)

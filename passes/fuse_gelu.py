"""Fuse the exported erf form of GELU into one ONNX Gelu node (lowered to ncnn GELU, fast_gelu 0).

    x * 0.5 * (1 + Erf(x / sqrt(2)))

in the arrangements exporters emit: x / sqrt(2) or x * (1 / sqrt(2)) into the
Erf; Erf + 1 (either operand order); the 0.5 applied last ((x * t) * 0.5), to x
first ((x * 0.5) * t) or to the sum (x * (t * 0.5)); any operand order of each
Mul. One walk from each Erf (converter/rewrite/driver.py); a match fuses only when every
intermediate tensor has no other reader and is not a graph output, and the constants are
one-element values.
"""
from __future__ import annotations

import math

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule
from converter.rewrite.patterns import expect_scalar, near, other, scalar, sole_reader, times

SQRT2 = math.sqrt(2.0)


def _scaled_input(graph: Graph, node: Node | None) -> str:
    """x for node = x / sqrt(2) or x * (1 / sqrt(2)) (either order for Mul)."""
    need(node is not None and node.op in ("Div", "Mul") and len(node.inputs) == 2,
         "Erf's input is not x / sqrt(2) or x * (1 / sqrt(2))")
    if node.op == "Div":
        expect_scalar(graph, node.inputs[1], SQRT2, "the Div before Erf's divisor")
        return node.inputs[0]
    x = times(graph, node, 1 / SQRT2)
    if x is not None:
        return x
    expect_scalar(graph, next((c for c in node.inputs[::-1] if graph.value(c) is not None), node.inputs[1]),
                  1 / SQRT2, "the Mul before Erf's factor")


def _match(graph: Graph, erf: Node) -> Match:
    pre = graph.producer(erf.inputs[0])
    x = _scaled_input(graph, pre)
    need(graph.use_count(pre.outputs[0]) == 1, "x / sqrt(2) is read outside the pattern")
    add = sole_reader(graph, erf.outputs[0], "Add")
    need(add is not None, "Erf's output is not read by one Add only")
    expect_scalar(graph, other(add, erf.outputs[0]), 1.0, "the Add after Erf's other operand")
    mul = sole_reader(graph, add.outputs[0], "Mul")
    need(mul is not None, "1 + Erf(...) is not read by one Mul only")
    rest = other(mul, add.outputs[0])
    if rest == x:                                                    # (x * t) * 0.5
        half = sole_reader(graph, mul.outputs[0], "Mul")
        need(half is not None, "x * (1 + Erf(...)) is not read by one Mul only")
        expect_scalar(graph, other(half, mul.outputs[0]), 0.5, "the last Mul's other operand")
        nodes = [pre, erf, add, mul, half]
    elif rest is not None and near(scalar(graph, rest), 0.5):        # x * (t * 0.5)
        last = sole_reader(graph, mul.outputs[0], "Mul")
        need(last is not None and other(last, mul.outputs[0]) == x,
             "(1 + Erf(...)) * 0.5 is not multiplied by the x Erf reads")
        nodes = [pre, erf, add, mul, last]
    else:                                                            # (x * 0.5) * t
        half_x = None if rest is None else graph.producer(rest)
        need(half_x is not None and half_x.op == "Mul" and graph.use_count(rest) == 1 and other(half_x, x) is not None,
             "1 + Erf(...) is multiplied by neither x, 0.5 nor x * 0.5")
        expect_scalar(graph, other(half_x, x), 0.5, "the Mul of x's other operand")
        nodes = [half_x, pre, erf, add, mul]
    out = nodes[-1].outputs[0]
    need(graph.tensors[out].shape == graph.tensors[x].shape, "a constant broadcasts the result to a bigger shape")
    return Match(nodes, x=x, out=out, erf=erf)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [Node(graph.fresh_name(f"{m.erf.name}_gelu"), "Gelu", [m.x], [m.out], {"approximate": "none"},
                 origin=m.erf.origin or m.erf.name)]


RULE = rule("fuse_gelu", "gelu_fused", "Erf", _match, _build)


def fuse_gelu(graph: Graph) -> dict:
    return apply(graph, RULE)

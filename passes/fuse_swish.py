"""Fuse x * Sigmoid(x) (either operand order) into one ncnn Swish layer.

The sigmoid's result must be read only by that Mul. The fused node is an
ncnn layer already, so lowering leaves it alone. One walk over the Sigmoids
(converter/rewrite/driver.py).
"""
from __future__ import annotations

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule


def _match(graph: Graph, sig: Node) -> Match:
    x, s = sig.inputs[0], sig.outputs[0]
    readers = graph.consumers(s)
    need(graph.use_count(s) == 1 and len(readers) == 1, "the Sigmoid's output is read more than once")
    need(graph.tensors[x].dtype.kind == "f", f"x is {graph.tensors[x].dtype}, not a float")
    mul = readers[0]
    need(mul.op == "Mul" and not mul.ncnn and sorted(mul.inputs) == sorted([x, s]),
         "the Sigmoid's output is not multiplied by the Sigmoid's input")
    return Match([mul, sig], x=x, mul=mul)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [Node(m.mul.name, "Swish", [m.x], [m.mul.outputs[0]], ncnn=True, origin=m.mul.origin or m.mul.name)]


RULE = rule("fuse_swish", "swish_fused", "Sigmoid", _match, _build)


def fuse_swish(graph: Graph) -> dict:
    return apply(graph, RULE)

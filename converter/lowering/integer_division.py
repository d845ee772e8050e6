"""ONNX integer Div (truncation toward zero) as exact ncnn float layers.

Integer tensors travel as float32 numbers. ncnn's x86 BinaryOp div is not correctly rounded
(the pip runtime gives 6 / 2 = 2.9999998, and 16000 / 160 = 99.99999), so `trunc(a / b)` can be
one too small exactly where the quotient is a whole number. The layers here take the float
quotient only as a first guess q0 of |a| / |b|, measure the remainder r = |a| - q0 * |b|
(exact: integers below 2**24) and step q0 by one where r is negative or reaches |b|. The
indicators are Clips: for an integer x, clip(x, 0, 1) is 1 exactly when x >= 1.

Exact while |a| < 2**23 (the guess is then within one of the truth) and |a| + |b| <= 2**24.
A constant divisor that is a power of two needs no correction: multiplying by its reciprocal
is exact.
"""
from __future__ import annotations

import math

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS

from ..ir import Graph, Node
from .common import fail, layer, new_tensor


class _Emitter:
    """Layers for one Div node, each writing a fresh tensor shaped like a, b or the output."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node, self.layers = graph, node, []
        self.out = graph.tensors[node.outputs[0]]

    def _emit(self, type_: str, inputs: list[str], params: dict, like: str | None, name: str | None) -> str:
        if name is None:
            t = self.graph.tensors[like] if like else self.out
            name = new_tensor(self.graph, f"{self.out.name}_idiv", t.shape, t.batch_axis)
        suffix = f"_idiv{len(self.layers)}"
        self.layers.append(layer(self.node, self.graph, type_, inputs, [name], params, suffix=suffix))
        return name

    def binary(self, a: str, b: str, op: str, out: str | None = None) -> str:
        return self._emit("BinaryOp", [a, b], {0: BINARY_OPS[op]}, None, out)

    def scalar(self, a: str, op: str, value: float, out: str | None = None, like_input: bool = False) -> str:
        return self._emit("BinaryOp", [a], {0: BINARY_OPS[op], 1: 1, 2: float(value)},
                          a if like_input else None, out)

    def unary(self, a: str, op: str, like_input: bool = False, out: str | None = None) -> str:
        return self._emit("UnaryOp", [a], {0: UNARY_OPS[op]}, a if like_input else None, out)

    def clip(self, a: str, low: float, high: float, like_input: bool = False) -> str:
        return self._emit("Clip", [a], {0: float(low), 1: float(high)}, a if like_input else None, None)


def _power_of_two(value: int) -> bool:
    return value != 0 and math.frexp(abs(value))[0] == 0.5


def integer_division(graph: Graph, node: Node) -> list[Node]:
    a, b = node.inputs[:2]
    divisor = graph.value(b)
    e = _Emitter(graph, node)
    out = node.outputs[0]
    if divisor is not None and divisor.size == 1 and graph.tensors[a].rank == e.out.rank:
        c = int(np.asarray(divisor).reshape(-1)[0])
        if c == 0:
            raise fail(node, graph, "integer division by a constant 0")
        if _power_of_two(c):
            e.unary(e.scalar(a, "mul", 1.0 / c), "trunc", out=out)
            return e.layers
        magnitude_b, sign_source = None, a          # |b| is the constant |c|
    else:
        magnitude_b, sign_source = e.unary(b, "abs", like_input=True), None
    magnitude_a = e.unary(a, "abs", like_input=True)
    if magnitude_b is None:
        guess = e.unary(e.scalar(magnitude_a, "mul", 1.0 / abs(c)), "trunc")
        remainder = e.binary(magnitude_a, e.scalar(guess, "mul", abs(c)), "sub")
        over = e.scalar(remainder, "add", 1 - abs(c))                        # r - |b| + 1
    else:
        guess = e.unary(e.binary(magnitude_a, magnitude_b, "div"), "trunc")
        remainder = e.binary(magnitude_a, e.binary(guess, magnitude_b, "mul"), "sub")
        over = e.scalar(e.binary(remainder, magnitude_b, "sub"), "add", 1.0)
    step_up = e.clip(over, 0.0, 1.0)                                          # 1 where r >= |b|
    step_down = e.clip(remainder, -1.0, 0.0)                                  # -1 where r < 0
    quotient = e.binary(e.binary(guess, step_up, "add"), step_down, "add")
    if sign_source is None:
        sign_source = e.binary(a, b, "mul")                                   # sign(a * b) = sign(a / b)
    sign = e.clip(sign_source, -1.0, 1.0, like_input=sign_source == a)
    if magnitude_b is None and c < 0:
        sign = e.scalar(sign, "mul", -1.0, like_input=True)
    e.binary(quotient, sign, "mul", out=out)
    return e.layers

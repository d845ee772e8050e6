"""Elementwise ONNX ops -> ncnn BinaryOp.

Operand ranks are left as ONNX has them; the broadcast pass (fix_broadcast)
makes them agree. A constant operand of one element becomes BinaryOp's
`with_scalar` form (reversed op when the constant is on the left).
"""
from __future__ import annotations

import math

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, BINARY_REVERSED, UNARY_OPS
from converter.shapes.arithmetic import broadcast_shapes
from converter.shapes.batch_axis import broadcast as broadcast_batch_axis

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import fail, layer, new_tensor, unary_chain
from .integer_division import integer_division

BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
          "Max": "max", "Min": "min", "Sum": "add", "Mean": "add"}


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.value(name)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def binary(graph: Graph, src: Node, a: str, b: str, op: int, out: str, suffix: str = "") -> Node:
    """One BinaryOp computing op(a, b); a one-element constant side becomes with_scalar."""
    scalar_b, scalar_a = _scalar(graph, b), _scalar(graph, a)
    out_rank = graph.tensors[out].rank
    # with_scalar keeps the dynamic operand's shape: only valid when the result has that shape
    if scalar_b is not None and graph.tensors[a].rank == out_rank:
        return layer(src, graph, "BinaryOp", [a], [out], {0: op, 1: 1, 2: scalar_b}, suffix=suffix)
    if scalar_a is not None and graph.tensors[b].rank == out_rank:
        return layer(src, graph, "BinaryOp", [b], [out], {0: BINARY_REVERSED[op], 1: 1, 2: scalar_a},
                     suffix=suffix)
    return layer(src, graph, "BinaryOp", [a, b], [out], {0: op}, suffix=suffix)


# integer tensors travel as float32 numbers (converter/shapes/int_inputs.py): these ops stay exact on them
# while values stay within 2**24 (Div: see integer_division.py)
INTEGER_EXACT = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"}


def _check_float(graph: Graph, node: Node) -> None:
    allowed = "fiu" if node.op in INTEGER_EXACT else "f"
    for name in filter(None, node.inputs):
        if graph.tensors[name].dtype.kind not in allowed:
            raise fail(node, graph, f"operand '{name}' is {graph.tensors[name].dtype}; ncnn computes "
                                    f"{node.op} in float only (integer math must fold to constants)")


# Pow by these constant exponents as UnaryOps: ncnn's SIMD pow is exp(b*log(a)), garbage for
# any base <= 0 (x86, measured), while (x - mean)**2 in exported norms has negative bases
POW_AS_UNARY = {2.0: ["square"], 0.5: ["sqrt"], -0.5: ["rsqrt"], -1.0: ["reciprocal"],
                4.0: ["square", "square"], -2.0: ["square", "reciprocal"]}


def _pow_by_constant(graph: Graph, node: Node) -> list[Node] | None:
    """x ** c as UnaryOps (and one BinaryOp mul for c = 3), where c allows it; else None."""
    exponent = _scalar(graph, node.inputs[1])
    x, out = node.inputs[0], node.outputs[0]
    if exponent is None or graph.tensors[x].shape != graph.tensors[out].shape:
        return None
    if exponent == 1.0:
        return [layer(node, graph, "Noop", [x], [out])]
    if exponent == 3.0:
        squared = new_tensor(graph, f"{out}_sq", graph.tensors[x].shape, graph.tensors[x].batch_axis)
        return [layer(node, graph, "UnaryOp", [x], [squared], {0: UNARY_OPS["square"]}, suffix="_sq"),
                layer(node, graph, "BinaryOp", [squared, x], [out], {0: BINARY_OPS["mul"]})]
    steps = POW_AS_UNARY.get(exponent)
    return None if steps is None else unary_chain(node, graph, x, out, steps)


def _warn_pow_base(graph: Graph, node: Node) -> None:
    """BinaryOp pow stays: right for positive bases only, which the converter cannot promise
    unless the base is a constant."""
    base = graph.value(node.inputs[0])
    if base is not None and np.all(base > 0):
        return
    graph.warnings.append(f"{node.describe()}: ncnn's BinaryOp pow is wrong for bases <= 0 (x86 gives "
                          "about 2.4e38 where ONNX gives 0, inf or NaN); the converted model is right only "
                          "for positive bases")


def _exact_reciprocal_division(graph: Graph, node: Node) -> list[Node] | None:
    """x / c as x * (1 / c) where c is a power of two: exact, where ncnn's x86 div is not
    correctly rounded (6 / 2 gives 2.9999998) and is slower than mul."""
    divisor = _scalar(graph, node.inputs[1])
    x, out = node.inputs[0], node.outputs[0]
    if (divisor is None or graph.tensors[x].rank != graph.tensors[out].rank
            or not 2.0 ** -100 < abs(divisor) < 2.0 ** 100 or abs(math.frexp(divisor)[0]) != 0.5):
        return None
    return [layer(node, graph, "BinaryOp", [x], [out], {0: BINARY_OPS["mul"], 1: 1, 2: 1.0 / divisor})]


ROUNDING_OPS = {"Floor", "Ceil", "Round"}


def _warn_rounded_quotient(graph: Graph, node: Node) -> None:
    """A float quotient rounded to an integer next: ncnn's x86 div is up to ~1.5 ulp off, so a
    quotient that is exactly a whole number can floor to one less."""
    rounded = [c for c in graph.consumers(node.outputs[0]) if c.op in ROUNDING_OPS
               or c.op == "Cast" and graph.tensors[c.outputs[0]].dtype.kind in "iu"]
    if rounded and not node.meta.get("division_noted"):     # a Div made by dynamic quantization: said once
        graph.warnings.append(f"{node.describe()}: its quotient goes to {rounded[0].describe()}; ncnn's x86 "
                              "BinaryOp div is not correctly rounded (6 / 2 gives 2.9999998), so where the "
                              "quotient is a whole number the rounded result can be off by one")


@lowers(*BINARY)
def elementwise(graph: Graph, node: Node) -> list[Node]:
    _check_float(graph, node)
    if node.op == "Pow":
        as_unary = _pow_by_constant(graph, node)
        if as_unary is not None:
            return as_unary
        _warn_pow_base(graph, node)
    if node.op == "Div" and graph.tensors[node.outputs[0]].dtype.kind in "iu":
        return integer_division(graph, node)
    if node.op == "Div":
        by_reciprocal = _exact_reciprocal_division(graph, node)
        if by_reciprocal is not None:
            return by_reciprocal
        _warn_rounded_quotient(graph, node)
    op = BINARY_OPS[BINARY[node.op]]
    out = node.outputs[0]
    inputs = [i for i in node.inputs if i]
    if len(inputs) == 1:
        return [layer(node, graph, "Noop", inputs, [out])]
    if len(inputs) == 2 and node.op != "Mean":
        return [binary(graph, node, inputs[0], inputs[1], op, out)]
    # variadic Sum/Mean/Max/Min: a left-to-right chain; Mean scales the sum
    layers, acc = [], inputs[0]
    for i, operand in enumerate(inputs[1:], start=1):
        last = i == len(inputs) - 1 and node.op != "Mean"
        step = out if last else partial_result(graph, node, inputs[:i + 1])
        layers.append(binary(graph, node, acc, operand, op, step, suffix=f"_{i}"))
        acc = step
    if node.op == "Mean":
        layers.append(layer(node, graph, "BinaryOp", [acc], [out],
                            {0: BINARY_OPS["mul"], 1: 1, 2: float(np.float32(1.0 / len(inputs)))},
                            suffix="_mean"))
    return layers


def partial_result(graph: Graph, node: Node, operands: list[str]) -> str:
    """A tensor for op(operands...) with its own broadcast shape and batch axis."""
    try:
        shape = broadcast_shapes(*(graph.tensors[o].shape for o in operands))
    except (ValueError, TypeError):
        raise fail(node, graph, f"operands {[graph.tensors[o].shape for o in operands]} do not broadcast") from None
    probe = Tensor("", shape)
    axis = broadcast_batch_axis(graph, Node("", node.op, operands, []), probe)
    return new_tensor(graph, f"{node.outputs[0]}_acc", shape, axis)

"""Sign and the hyperbolic functions -> ncnn UnaryOp (codes 20..27, ncnn 20260526 and later) and
short chains where the x86 runtime's own UnaryOp is not close enough to onnxruntime.

Measured in the pip runtime against onnxruntime (relative error, x86 SIMD lanes):
- sign, atanh: one UnaryOp. sign is exact (0 and -0 give 0); atanh within 1.7e-4 (worst near
  |x| = 1e-4, where it leaves its x branch) and NaN outside [-1, 1] as onnxruntime, but NaN at
  exactly +-1 where onnxruntime gives +-inf (its logs give NaN at 0; no ncnn layer makes an inf
  from a finite input short of an overflow).
- acosh: the UnaryOp is within 7e-5 (worst just above 1) but gives -87.3 (log of its clamped 0)
  below 1, where onnxruntime gives NaN: sqrt(min(x - 1, 0)) is added, 0 on the domain (x - 1 is
  exact near 1) and NaN below it.
- sinh, cosh: the UnaryOp saturates at 1.2e38 above |x| = 88.38 (its exp clamps the argument)
  where onnxruntime goes on to 3.4e38 and then inf. The double-angle forms
  sinh(x) = 2 sinh(x/2) cosh(x/2) and cosh(x) = 2 cosh(x/2)**2 - 1 keep the UnaryOps on
  |x/2| <= 88.38 up to the float range's end and overflow to inf where onnxruntime does; sinh
  stays within 1.7e-4 (the UnaryOp's own error near |x| = 1e-4), cosh within 1e-6.
- asinh: the UnaryOp is log(x + sqrt(x*x + 1)), which returns 0 for |x| < 1e-7 (relative error
  1) and is 1e-2 off at 4e-6. Here asinh(x) = sign(x) log1p(a + a*g), a = |x|,
  g = a' / (1 + sqrt(1 + a'*a')), a' = min(a, 1e18) (a'*a' stays finite; g is 1 to float
  precision beyond), within 1.3e-4 (log1p's own error, worst near 2e-4) for |x| < 1.7e38; above
  that a + a*g overflows and log1p(inf) is 88.72 in ncnn where asinh is up to 89.4. No division by 0 or inf
  happens: ncnn's x86 1/x gives NaN for 0, inf and |x| < ~1.2e-38.
"""
from __future__ import annotations

from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS

from ..ir import Graph, Node
from . import lowers
from .common import Chain, layer, require_float

NATIVE = {"Sign": "sign", "Atanh": "atanh"}
# beyond this |x| asinh's g is 1 in float32 and a*a would still be finite
ASINH_CLAMP = 1e18


@lowers(*NATIVE)
def native(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    return [layer(node, graph, "UnaryOp", node.inputs[:1], node.outputs[:1], {0: UNARY_OPS[NATIVE[node.op]]})]


def _chain(graph: Graph, node: Node) -> Chain:
    require_float(graph, node)
    return Chain(graph, node, [])


@lowers("Sinh")
def sinh(graph: Graph, node: Node) -> list[Node]:
    c = _chain(graph, node)
    half = c.scalar(node.inputs[0], "mul", 0.5, False, "_half")
    twice_sinh = c.scalar(c.unary(half, "sinh", False, "_sinh"), "mul", 2.0, False, "_twice")
    c.binary(twice_sinh, c.unary(half, "cosh", False, "_cosh"), "mul", "", out=node.outputs[0])
    return c.layers


@lowers("Cosh")
def cosh(graph: Graph, node: Node) -> list[Node]:
    c = _chain(graph, node)
    half = c.scalar(node.inputs[0], "mul", 0.5, False, "_half")
    squared = c.unary(c.unary(half, "cosh", False, "_cosh"), "square", False, "_square")
    twice = c.scalar(squared, "mul", 2.0, False, "_twice")
    c.layers.append(layer(node, graph, "BinaryOp", [twice], node.outputs[:1],
                          {0: BINARY_OPS["sub"], 1: 1, 2: 1.0}))
    return c.layers


@lowers("Acosh")
def acosh(graph: Graph, node: Node) -> list[Node]:
    c = _chain(graph, node)
    x = node.inputs[0]
    below = c.scalar(c.scalar(x, "sub", 1.0, False, "_below"), "min", 0.0, False, "_clamp")
    c.binary(c.unary(x, "acosh", False, "_acosh"), c.unary(below, "sqrt", False, "_nan"), "add", "",
             out=node.outputs[0])
    return c.layers


@lowers("Asinh")
def asinh(graph: Graph, node: Node) -> list[Node]:
    c = _chain(graph, node)
    x = node.inputs[0]
    a = c.unary(x, "abs", False, "_abs")
    clamped = c.scalar(a, "min", ASINH_CLAMP, False, "_clamp")
    root = c.unary(c.scalar(c.unary(clamped, "square", False, "_square"), "add", 1.0, False, "_one"),
                   "sqrt", False, "_sqrt")
    g = c.binary(clamped, c.scalar(root, "add", 1.0, False, "_den"), "div", "_g")
    magnitude = c.unary(c.binary(a, c.binary(a, g, "mul", "_ag"), "add", "_sum"), "log1p", False, "_log1p")
    c.binary(magnitude, c.unary(x, "sign", False, "_sign"), "mul", "", out=node.outputs[0])
    return c.layers

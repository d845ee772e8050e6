"""Softplus, Softsign, Mish, Celu, Shrink -> ncnn layers or short UnaryOp/BinaryOp chains.

Softplus is BinaryOp logaddexp(x, 0), not ncnn's Softplus layer: the layer
computes log(exp(x) + 1) directly and returns inf above x = 88 (measured),
where logaddexp takes max + log1p(exp(min - max)) and stays finite.
"""
from __future__ import annotations

from ..ir import Graph, Node
from ..ncnn_layers import BINARY_OPS, UNARY_OPS
from . import lowers
from .activation import _one
from .cnn import require_float
from .common import layer, new_tensor


@lowers("Softplus")
def softplus(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "BinaryOp", {0: BINARY_OPS["logaddexp"], 1: 1, 2: 0.0})


@lowers("Softsign")
def softsign(graph: Graph, node: Node) -> list[Node]:
    """x / (1 + |x|)."""
    require_float(graph, node)
    x, out = node.inputs[0], node.outputs[0]
    t = graph.tensors[out]
    magnitude = new_tensor(graph, f"{out}_abs", t.shape, t.batch_axis)
    denominator = new_tensor(graph, f"{out}_den", t.shape, t.batch_axis)
    return [layer(node, graph, "UnaryOp", [x], [magnitude], {0: UNARY_OPS["abs"]}, suffix="_abs"),
            layer(node, graph, "BinaryOp", [magnitude], [denominator],
                  {0: BINARY_OPS["add"], 1: 1, 2: 1.0}, suffix="_den"),
            layer(node, graph, "BinaryOp", [x, denominator], [out], {0: BINARY_OPS["div"]})]


@lowers("Mish")
def mish(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "Mish")


@lowers("Celu")
def celu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "CELU", {0: float(node.attrs.get("alpha", 1.0))})


@lowers("Shrink")
def shrink(graph: Graph, node: Node) -> list[Node]:
    # same formula as ONNX: x + bias below -lambd, x - bias above lambd, else 0
    return _one(graph, node, "Shrink", {0: float(node.attrs.get("bias", 0.0)),
                                        1: float(node.attrs.get("lambd", 0.5))})

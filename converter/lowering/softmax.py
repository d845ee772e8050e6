"""Softmax -> ncnn Softmax; LogSoftmax -> a Reduction + BinaryOp chain.

LogSoftmax is x - max - log(sum(exp(x - max))): ncnn's Softmax followed by a
log underflows to -inf once x - max drops below about -104. Every Reduction
keeps the reduced axes, so the follow-up BinaryOp has operands of equal rank.
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import Chain, fail, layer, ncnn_axes, ncnn_axis, require_float


@lowers("Softmax")
def softmax(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    axis = node.attrs["axis"]
    if graph.opset < 13 and axis % max(x.rank, 1) != x.rank - 1:
        raise fail(node, graph, f"opset {graph.opset} Softmax with axis {axis} normalizes the flattened "
                                "trailing axes together; only the last axis is supported")
    return [layer(node, graph, "Softmax", [x.name], node.outputs[:1],
                  {0: ncnn_axis(graph, node, x.name, axis), 1: 1})]


@lowers("LogSoftmax")
def log_softmax(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    if graph.opset >= 13:
        axes = [node.attrs["axis"]]
    else:                    # opsets 1-12 normalize the flattened trailing axes together
        axis = node.attrs.get("axis", 1)
        axes = list(range(axis % max(x.rank, 1), x.rank))
    chain = Chain(graph, node, ncnn_axes(graph, node, axes))
    peak = chain.reduce(x.name, "max", "_max")
    shifted = chain.binary(x.name, peak, "sub", "_shifted")
    log_total = chain.reduce(shifted, "logsumexp", "_logsumexp")
    chain.binary(shifted, log_total, "sub", "", out=node.outputs[0])
    return chain.layers



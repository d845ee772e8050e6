"""LogSoftmax, LpNormalization and MeanVarianceNormalization -> ncnn Reduction + BinaryOp chains.

Every Reduction here keeps the reduced axes (keepdims=1), so the follow-up
BinaryOp has operands of equal rank and broadcasts along the reduced axes.
LogSoftmax is x - max - log(sum(exp(x - max))): ncnn's Softmax followed by
a log underflows to -inf once x - max drops below about -104.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ncnn_layers import BINARY_OPS, UNARY_OPS
from . import lowers
from .cnn import require_float
from .common import fail, layer, new_tensor

# ncnn Reduction operation codes (reduction.h)
REDUCE_SUM_ABS, REDUCE_MEAN, REDUCE_MAX, REDUCE_L2, REDUCE_LOGSUMEXP = 7, 3, 4, 8, 10
FLT_MIN = float(np.finfo(np.float32).tiny)
MVN_EPSILON = 1e-9           # the ONNX function body adds it to the standard deviation


def _ncnn_axes(graph: Graph, node: Node, onnx_axes: list[int]) -> list[int]:
    """The ncnn axes of the reduced ONNX axes; the batch axis (extent 1) drops out."""
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    for a in onnx_axes:
        if not -x.rank <= a < x.rank:
            raise fail(node, graph, f"axis {a} is out of range for rank {x.rank}")
    axes = sorted({x.ncnn_axis(a) for a in onnx_axes} - {None})
    if not axes:
        raise fail(node, graph, f"normalizing only along the batch axis {x.batch_axis} is not supported "
                                "by ncnn (ncnn has no batch axis)")
    return axes


class Chain:
    """Layers for one ONNX node, each writing a fresh tensor shaped like x or like x reduced."""

    def __init__(self, graph: Graph, node: Node, nc_axes: list[int]):
        self.graph, self.node, self.nc_axes, self.layers = graph, node, nc_axes, []
        self.x = graph.tensors[node.inputs[0]]
        self.reduced_shape = tuple(1 if self.x.ncnn_axis(i) in nc_axes else d
                                   for i, d in enumerate(self.x.shape))

    def _emit(self, type_: str, inputs: list[str], params: dict, reduced: bool, suffix: str,
              out: str | None = None) -> str:
        if out is None:
            shape = self.reduced_shape if reduced else self.x.shape
            out = new_tensor(self.graph, f"{self.node.outputs[0]}{suffix}", shape, self.x.batch_axis)
        self.layers.append(layer(self.node, self.graph, type_, inputs, [out], params, suffix=suffix))
        return out

    def reduce(self, x: str, operation: int, suffix: str, out: str | None = None, keepdims: int = 1) -> str:
        params = {0: operation, 1: 0, 3: self.nc_axes, 4: keepdims, 5: 1}
        return self._emit("Reduction", [x], params, True, suffix, out)

    def binary(self, a: str, b: str, op: str, suffix: str, out: str | None = None) -> str:
        return self._emit("BinaryOp", [a, b], {0: BINARY_OPS[op]}, False, suffix, out)

    def scalar(self, a: str, op: str, value: float, reduced: bool, suffix: str) -> str:
        return self._emit("BinaryOp", [a], {0: BINARY_OPS[op], 1: 1, 2: value}, reduced, suffix)

    def unary(self, a: str, op: str, reduced: bool, suffix: str) -> str:
        return self._emit("UnaryOp", [a], {0: UNARY_OPS[op]}, reduced, suffix)


@lowers("LogSoftmax")
def log_softmax(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    if graph.opset >= 13:
        axes = [node.attrs.get("axis", -1)]
    else:                    # opsets 1-12 normalize the flattened trailing axes together
        axis = node.attrs.get("axis", 1)
        axes = list(range(axis % max(x.rank, 1), x.rank))
    chain = Chain(graph, node, _ncnn_axes(graph, node, axes))
    peak = chain.reduce(x.name, REDUCE_MAX, "_max")
    shifted = chain.binary(x.name, peak, "sub", "_shifted")
    log_total = chain.reduce(shifted, REDUCE_LOGSUMEXP, "_logsumexp")
    chain.binary(shifted, log_total, "sub", "", out=node.outputs[0])
    return chain.layers


@lowers("LpNormalization")
def lp_normalization(graph: Graph, node: Node) -> list[Node]:
    """x / norm, and 0 where the norm is 0 (ONNX's rule): the norm is raised to FLT_MIN first."""
    require_float(graph, node)
    p = int(node.attrs.get("p", 2))
    if p not in (1, 2):
        raise fail(node, graph, f"p={p}: ONNX LpNormalization defines only p=1 and p=2")
    chain = Chain(graph, node, _ncnn_axes(graph, node, [node.attrs.get("axis", -1)]))
    norm = chain.reduce(chain.x.name, REDUCE_L2 if p == 2 else REDUCE_SUM_ABS, "_norm")
    safe = chain.scalar(norm, "max", FLT_MIN, True, "_safe")
    chain.binary(chain.x.name, safe, "div", "", out=node.outputs[0])
    return chain.layers


@lowers("MeanVarianceNormalization")
def mean_variance_normalization(graph: Graph, node: Node) -> list[Node]:
    """(x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9), as ONNX's function body."""
    require_float(graph, node)
    axes = [int(a) for a in node.attrs.get("axes", [0, 2, 3])]
    chain = Chain(graph, node, _ncnn_axes(graph, node, axes))
    mean = chain.reduce(chain.x.name, REDUCE_MEAN, "_mean")
    centered = chain.binary(chain.x.name, mean, "sub", "_centered")
    squared = chain.unary(centered, "square", False, "_squared")
    variance = chain.reduce(squared, REDUCE_MEAN, "_variance")
    deviation = chain.unary(variance, "sqrt", True, "_std")
    denominator = chain.scalar(deviation, "add", MVN_EPSILON, True, "_den")
    chain.binary(centered, denominator, "div", "", out=node.outputs[0])
    return chain.layers

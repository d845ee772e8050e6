"""ONNX CumSum -> ncnn CumulativeSum (inclusive), between Flips when reversed.

A sum along the batch axis (extent 1) is the tensor itself. An exclusive sum
has no exact ncnn form (sum - x rounds differently from onnxruntime's shifted
sum), so it is refused; the anchor-grid rewrite never asks for one.
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import constant, fail, layer, new_tensor, require_float


@lowers("CumSum")
def cumsum(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].dtype.kind not in "iu":     # integer sums stay exact below 2**24
        require_float(graph, node)
    x, out = graph.tensors[node.inputs[0]], node.outputs[0]
    axis = int(constant(graph, node, 1, "the axis").reshape(-1)[0])
    if x.rank is None or not -x.rank <= axis < x.rank:
        raise fail(node, graph, f"axis {axis} is out of range for '{x.name}'")
    if node.attrs["exclusive"]:
        raise fail(node, graph, "exclusive=1: ncnn's CumulativeSum sums inclusively, and x's own term "
                                "cannot be taken back out without rounding differently")
    mapped = x.ncnn_axis(axis)
    if mapped is None:                      # the batch axis: a sum over one element
        return [layer(node, graph, "Noop", [x.name], [out])]
    if not node.attrs["reverse"]:
        return [layer(node, graph, "CumulativeSum", [x.name], [out], {0: mapped})]
    flipped = new_tensor(graph, f"{out}_flipped", x.shape, x.batch_axis)
    summed = new_tensor(graph, f"{out}_summed", x.shape, x.batch_axis)
    return [layer(node, graph, "Flip", [x.name], [flipped], {0: [mapped]}, suffix="_flip"),
            layer(node, graph, "CumulativeSum", [flipped], [summed], {0: mapped}),
            layer(node, graph, "Flip", [summed], [out], {0: [mapped]}, suffix="_unflip")]

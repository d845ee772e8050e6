"""ONNX Tile (constant repeats) -> ncnn Tile with a numpy-style repeats array.

The repeats array always has one entry per ncnn axis: ncnn reads a shorter
array against the innermost axes, and 3 repeats on a 4-D blob as d, h, w.
Repeating the batch axis gives a tensor without one: the input is first
reshaped to keep that axis.
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .cnn import require_float
from .common import constant, fail, layer, new_tensor
from .tensor_ops import reshape_layer


@lowers("Tile")
def tile(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    repeats = [int(r) for r in constant(graph, node, 1, "repeats").reshape(-1)]
    if x.rank is None or len(repeats) != x.rank:
        raise fail(node, graph, f"repeats {repeats} must have one entry per axis of '{x.name}'")
    if any(r < 1 for r in repeats):
        raise fail(node, graph, f"repeats {repeats}: ncnn cannot hold empty tensors")
    if all(r == 1 for r in repeats):
        return [layer(node, graph, "Noop", [x.name], [out.name])]
    layers, source = [], x.name
    if x.batch_axis is not None and repeats[x.batch_axis] > 1:
        if x.rank > 4:
            raise fail(node, graph, f"repeating the batch axis of a rank-{x.rank} tensor needs "
                                    f"{x.rank} ncnn axes; ncnn holds at most 4")
        source = new_tensor(graph, f"{x.name}_with_batch", x.shape, None)
        pairs = {i: x.ncnn_axis(i) for i in range(x.rank) if i != x.batch_axis}
        layers.append(reshape_layer(graph, node, x.name, source, pairs, suffix="_keep_batch"))
    kept = [r for i, r in enumerate(repeats) if graph.tensors[source].ncnn_axis(i) is not None]
    layers.append(layer(node, graph, "Tile", [source], [out.name], {2: kept}))
    return layers

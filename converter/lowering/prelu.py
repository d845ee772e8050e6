"""PRelu -> ncnn PReLU when the slope is one value or varies only along ncnn's outermost
axis; otherwise the exact BinaryOp form max(x, 0) + slope * min(x, 0)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ncnn_layers import BINARY_OPS
from . import lowers
from .cnn import require_float
from .common import fail, layer, new_tensor
from .elementwise import binary


@lowers("PRelu")
def prelu(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node, node.inputs[:2])
    x, out = graph.tensors[node.inputs[0]], node.outputs[0]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    slopes = _prelu_slopes(graph, node)
    if slopes is not None:
        return [layer(node, graph, "PReLU", [x.name], [out], {0: slopes.size}, [slopes])]
    return _binary_form(graph, node)


def _prelu_slopes(graph: Graph, node: Node) -> np.ndarray | None:
    """The slopes ncnn PReLU applies (one, or one per outermost ncnn index), or None."""
    x, value = graph.tensors[node.inputs[0]], graph.value(node.inputs[1])
    if value is None or value.ndim > x.rank:
        return None
    if value.size == 1:
        return value.astype(np.float32).reshape(1)
    aligned = value.reshape((1,) * (x.rank - value.ndim) + value.shape)
    outer = next((i for i in range(x.rank) if i != x.batch_axis), None)
    varying = [i for i, n in enumerate(aligned.shape) if n != 1]
    if varying != [outer]:
        return None
    return aligned.astype(np.float32).reshape(-1)


def _binary_form(graph: Graph, node: Node) -> list[Node]:
    x, slope, out = graph.tensors[node.inputs[0]], node.inputs[1], node.outputs[0]
    pos, neg, scaled = (new_tensor(graph, f"{out}_{s}", x.shape, x.batch_axis) for s in ("pos", "neg", "scaled"))
    return [layer(node, graph, "BinaryOp", [x.name], [pos], {0: BINARY_OPS["max"], 1: 1, 2: 0.0}, suffix="_pos"),
            layer(node, graph, "BinaryOp", [x.name], [neg], {0: BINARY_OPS["min"], 1: 1, 2: 0.0}, suffix="_neg"),
            binary(graph, node, neg, slope, BINARY_OPS["mul"], scaled, suffix="_scale"),
            binary(graph, node, pos, scaled, BINARY_OPS["add"], out, suffix="_sum")]

"""LRN -> ncnn LRN (across channels) and PRelu -> ncnn PReLU."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import spatial_input
from .common import constant, fail, layer


@lowers("LRN")
def lrn(graph: Graph, node: Node) -> list[Node]:
    spatial_input(graph, node, ranks=(4,))
    size = int(node.attrs["size"])
    if size % 2 == 0:
        # ncnn sums channels q - size/2 .. q + size/2: size + 1 of them when size is even
        raise fail(node, graph, f"LRN size {size} is even; ncnn's window then holds size + 1 channels")
    params = {0: 0, 1: size, 2: float(node.attrs.get("alpha", 1e-4)), 3: float(node.attrs.get("beta", 0.75)),
              4: float(node.attrs.get("bias", 1.0))}
    return [layer(node, graph, "LRN", node.inputs[:1], node.outputs, params)]


@lowers("PRelu")
def prelu(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    slope = constant(graph, node, 1, "the slope").astype(np.float32)
    if x.shape is None or x.batch_axis != 0 or x.rank < 2:
        raise fail(node, graph, "PRelu needs an input (1, C, ...) with the batch axis at 0")
    if slope.size == 1:
        return [layer(node, graph, "PReLU", node.inputs[:1], node.outputs, {0: 1}, [slope.reshape(1)])]
    channels = x.shape[1]
    # per channel: numpy-aligned against (1, C, ...) the slope is (1, C, 1, ..., 1)
    padded = (1,) * (x.rank - slope.ndim) + slope.shape
    if slope.ndim > x.rank or padded[1] != channels or any(d != 1 for i, d in enumerate(padded) if i != 1):
        raise fail(node, graph, f"slope of shape {list(slope.shape)}: ncnn's PReLU takes one slope or one per "
                                f"channel of {list(x.shape)}")
    return [layer(node, graph, "PReLU", node.inputs[:1], node.outputs, {0: channels}, [slope.reshape(-1)])]

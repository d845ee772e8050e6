"""InstanceNormalization -> ncnn InstanceNorm; DepthToSpace -> PixelShuffle; SpaceToDepth -> Reorg."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import spatial_input, wrap_1d
from .common import constant, fail, layer

PIXELSHUFFLE_MODE = {"CRD": 0, "DCR": 1}


@lowers("InstanceNormalization")
def instance_norm(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node, ranks=(3, 4, 5))
    scale = constant(graph, node, 1, "scale").astype(np.float32).reshape(-1)
    bias = constant(graph, node, 2, "bias").astype(np.float32).reshape(-1)
    if shape[1] is not None and (scale.size != shape[1] or bias.size != shape[1]):
        raise fail(node, graph, f"{scale.size} scales for {shape[1]} channels")
    params = {0: int(scale.size), 1: float(node.attrs.get("epsilon", 1e-5)), 2: 1}

    def make(x: str, y: str) -> list[Node]:
        return [layer(node, graph, "InstanceNorm", [x], [y], params, [scale, bias])]
    if nspatial == 1:      # ncnn's 2-D blob has one channel: normalize (C, 1, L) instead
        return wrap_1d(graph, node, make, shape[1], shape[2])
    return make(node.inputs[0], node.outputs[0])


@lowers("DepthToSpace")
def depth_to_space(graph: Graph, node: Node) -> list[Node]:
    spatial_input(graph, node, ranks=(4,))
    mode = node.attrs.get("mode", "DCR")
    params = {0: int(node.attrs["blocksize"]), 1: PIXELSHUFFLE_MODE[mode]}
    return [layer(node, graph, "PixelShuffle", node.inputs[:1], node.outputs[:1], params)]


@lowers("SpaceToDepth")
def space_to_depth(graph: Graph, node: Node) -> list[Node]:
    shape, _ = spatial_input(graph, node, ranks=(4,))
    s = int(node.attrs["blocksize"])
    if any(d is not None and d % s for d in shape[2:]):
        raise fail(node, graph, f"spatial extents {list(shape[2:])} do not divide by blocksize {s}")
    # ONNX puts block (sh, sw) of channel q at (sh*s + sw)*C + q: Reorg's mode 1
    return [layer(node, graph, "Reorg", node.inputs[:1], node.outputs[:1], {0: s, 1: 1})]

"""DepthToSpace -> ncnn PixelShuffle, SpaceToDepth -> ncnn Reorg, on (1, C, H, W).

ncnn mode 0 numbers the block's pixels inside each output channel (ONNX's
CRD), mode 1 numbers the output channels inside each block pixel (DCR, and
SpaceToDepth's only order).
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, spatial_input

PIXELSHUFFLE_MODES = {"CRD": 0, "DCR": 1}
REORG_BLOCK_OUTER = 1


def _blocksize(graph: Graph, node: Node) -> int:
    spatial_input(graph, node, ranks=(4,))
    size = int(node.attrs["blocksize"])
    if size < 1:
        raise fail(node, graph, f"blocksize {size} must be positive")
    return size


@lowers("DepthToSpace")
def depth_to_space(graph: Graph, node: Node) -> list[Node]:
    size = _blocksize(graph, node)
    mode = node.attrs.get("mode", "DCR")
    if mode not in PIXELSHUFFLE_MODES:
        raise fail(node, graph, f"unknown mode {mode!r}")
    return [layer(node, graph, "PixelShuffle", node.inputs[:1], node.outputs[:1],
                  {0: size, 1: PIXELSHUFFLE_MODES[mode]})]


@lowers("SpaceToDepth")
def space_to_depth(graph: Graph, node: Node) -> list[Node]:
    size = _blocksize(graph, node)
    return [layer(node, graph, "Reorg", node.inputs[:1], node.outputs[:1], {0: size, 1: REORG_BLOCK_OUTER})]

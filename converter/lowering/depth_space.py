"""DepthToSpace -> ncnn PixelShuffle, SpaceToDepth -> ncnn Reorg, on (1, C, H, W).

In both layers ncnn mode 0 numbers the block's pixels inside each channel (ONNX's
CRD), mode 1 numbers the channels inside each block pixel (DCR, the default of both
ops; SpaceToDepth has a mode attribute since opset 28).
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, spatial_input

NCNN_MODES = {"CRD": 0, "DCR": 1}


def _blocksize(graph: Graph, node: Node) -> int:
    spatial_input(graph, node, ranks=(4,))
    size = int(node.attrs["blocksize"])
    if size < 1:
        raise fail(node, graph, f"blocksize {size} must be positive")
    return size


def _mode(graph: Graph, node: Node) -> int:
    # .get: SpaceToDepth has no mode before opset 28
    mode = node.attrs.get("mode", "DCR")
    if mode not in NCNN_MODES:
        raise fail(node, graph, f"unknown mode {mode!r}")
    return NCNN_MODES[mode]


@lowers("DepthToSpace")
def depth_to_space(graph: Graph, node: Node) -> list[Node]:
    return [layer(node, graph, "PixelShuffle", node.inputs[:1], node.outputs[:1],
                  {0: _blocksize(graph, node), 1: _mode(graph, node)})]


@lowers("SpaceToDepth")
def space_to_depth(graph: Graph, node: Node) -> list[Node]:
    return [layer(node, graph, "Reorg", node.inputs[:1], node.outputs[:1],
                  {0: _blocksize(graph, node), 1: _mode(graph, node)})]

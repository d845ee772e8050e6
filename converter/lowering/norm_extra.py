"""LRN, InstanceNormalization and GroupNormalization -> ncnn LRN / InstanceNorm / GroupNorm.

All three work on the channel axis, ONNX axis 1, which must follow a batch
axis at 0 so that it is ncnn's outermost axis.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import require_float, spatial_input, wrap_1d
from .common import constant, fail, layer

ACROSS_CHANNELS = 0


@lowers("LRN")
def lrn(graph: Graph, node: Node) -> list[Node]:
    """ONNX and ncnn both scale alpha by 1/size; ncnn's window is the same only for odd sizes."""
    spatial_input(graph, node, ranks=(4,))     # onnxruntime, the reference, runs only 4-D LRN
    size = int(node.attrs["size"])
    if size < 1 or size % 2 == 0:
        raise fail(node, graph, f"size {size}: ncnn's LRN window matches ONNX's only for odd sizes "
                                "(for an even size ncnn reaches one channel further back, ONNX forward)")
    params = {0: ACROSS_CHANNELS, 1: size, 2: float(node.attrs.get("alpha", 1e-4)),
              3: float(node.attrs.get("beta", 0.75)), 4: float(node.attrs.get("bias", 1.0))}
    return [layer(node, graph, "LRN", node.inputs[:1], node.outputs[:1], params)]

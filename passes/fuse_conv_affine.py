"""Fold a per-channel constant Mul or Add after a Conv into the Conv's weights and bias (ONNX level).

DETR's backbone (torchvision FrozenBatchNorm2d) is exported as Conv -> Mul(scale) -> Add(shift)
with (1, C, 1, 1) constants instead of a BatchNormalization: the same affine per output channel
that fuse_conv_batchnorm folds, so it folds the same way (y * s = conv with W * s, bias * s;
y + t = conv with bias + t). The constant must vary along the channel axis only and leave the
shape as it is; the Conv's output must have no other reader. One walk over the Mul/Add nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.channel_affine import fold_into_conv  # the same arithmetic as for a BN


def _per_channel(graph: Graph, conv: Node, node: Node, const: str) -> np.ndarray | None:
    """The constant as one value per output channel, if it broadcasts only along channels."""
    value, y = graph.value(const), graph.tensors[conv.outputs[0]]
    if value is None or value.dtype != np.float32 or y.shape is None or y.rank < 2 or value.ndim > y.rank \
            or graph.tensors[node.outputs[0]].shape != y.shape or y.shape[1] is None:
        return None
    aligned = (1,) * (y.rank - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(aligned) if i != 1) or aligned[1] not in (1, y.shape[1]):
        return None
    return np.broadcast_to(value.reshape(-1).astype(np.float64), (y.shape[1],))


def fuse_conv_affine(graph: Graph) -> dict:
    fused = 0
    for node in graph.topological():
        if node.op not in ("Mul", "Add") or node.ncnn or node.name not in graph.nodes or len(node.inputs) != 2:
            continue
        for slot in (0, 1):
            conv = graph.producer(node.inputs[slot])
            if conv is not None and conv.op == "Conv" and not conv.ncnn and graph.use_count(conv.outputs[0]) == 1:
                c = _per_channel(graph, conv, node, node.inputs[1 - slot])
                if c is not None:
                    break
        else:
            continue
        s, t = (c, np.zeros_like(c)) if node.op == "Mul" else (np.ones_like(c), c)
        inputs = fold_into_conv(graph, conv, s, t)
        if inputs is None:
            continue
        graph.fold_into_producer(conv, node, inputs=inputs, outputs=[node.outputs[0]])
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"conv_affine_fused": fused}

"""LRN, InstanceNormalization and GroupNormalization -> ncnn LRN / InstanceNorm / GroupNorm.

All three work on the channel axis, ONNX axis 1, which must follow a batch
axis at 0 so that it is ncnn's outermost axis.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import require_float, spatial_input
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


def _channel_input(graph: Graph, node: Node) -> tuple:
    """(ONNX shape, channels) of an input (1, C, ...) whose channel axis is ncnn's outermost."""
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    if x.shape is None or x.rank < 3:
        raise fail(node, graph, "the input needs a batch, a channel and at least one spatial axis")
    if x.batch_axis != 0:
        raise fail(node, graph, f"input '{x.name}' {list(x.shape)} has no batch axis of extent 1 at axis 0; "
                                "ncnn normalizes the outermost axis, which must be ONNX's channel axis")
    if x.rank > 5:
        raise fail(node, graph, f"rank {x.rank}: ncnn holds at most 4 axes without the batch axis")
    if x.shape[1] is None:
        raise fail(node, graph, "the channel count is unknown")
    return x.shape, int(x.shape[1])


def _per_channel(graph: Graph, node: Node, slot: int, what: str, channels: int,
                 per: int = 1) -> np.ndarray:
    """A constant scale/bias as one float per channel (`per` consecutive channels share a value)."""
    value = constant(graph, node, slot, what).astype(np.float32).ravel()
    if value.size * per != channels:
        raise fail(node, graph, f"{what} has {value.size} values for {channels} channels")
    return np.repeat(value, per)


@lowers("InstanceNormalization")
def instance_normalization(graph: Graph, node: Node) -> list[Node]:
    """3-D/4-D ncnn blobs -> InstanceNorm; a 2-D (C, L) blob -> GroupNorm with one channel per
    group, since InstanceNorm would take the whole 2-D blob as one channel."""
    shape, channels = _channel_input(graph, node)
    gamma = _per_channel(graph, node, 1, "scale (input 1)", channels)
    beta = _per_channel(graph, node, 2, "B (input 2)", channels)
    eps = float(node.attrs.get("epsilon", 1e-5))
    if len(shape) == 3:
        return [layer(node, graph, "GroupNorm", node.inputs[:1], node.outputs[:1],
                      {0: channels, 1: channels, 2: eps, 3: 1}, [gamma, beta])]
    return [layer(node, graph, "InstanceNorm", node.inputs[:1], node.outputs[:1],
                  {0: channels, 1: eps, 2: 1}, [gamma, beta])]


@lowers("GroupNormalization")
def group_normalization(graph: Graph, node: Node) -> list[Node]:
    """ncnn GroupNorm's gamma/beta are per channel: opset 21's are, opset 18's per-group values
    are repeated over each group's channels."""
    shape, channels = _channel_input(graph, node)
    groups = int(node.attrs["num_groups"])
    if groups < 1 or channels % groups:
        raise fail(node, graph, f"{channels} channels do not split into {groups} groups")
    per = channels // groups if graph.opset < 21 else 1
    gamma = _per_channel(graph, node, 1, "scale (input 1)", channels, per)
    beta = _per_channel(graph, node, 2, "bias (input 2)", channels, per)
    return [layer(node, graph, "GroupNorm", node.inputs[:1], node.outputs[:1],
                  {0: groups, 1: channels, 2: float(node.attrs.get("epsilon", 1e-5)), 3: 1},
                  [gamma, beta])]

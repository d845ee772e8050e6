"""Fuse group normalization as torch's TorchScript exporter writes nn.GroupNorm (opset < 18) into one
ncnn GroupNorm layer:

    r = Reshape(x, (N, G, -1))                    x (1, C, ...), G dividing C
    n = InstanceNormalization(r, s, b)            per-group constants s, b (ones and zeros from torch)
    y = Reshape(n, shape of x)
    y = y * gamma + beta                          (each optional, one value per channel)

ncnn's GroupNorm normalizes each group of C/G channels and applies one gamma and beta per channel,
which take s and b along: (n*s_g + b_g)*gamma_c + beta_c. Lowered one by one these are two Reshapes,
a one-channel GroupNorm and two broadcast BinaryOps (poolformer: 1.34x the time of pnnx's file,
which fuses them). A constant varying along another axis, an intermediate read elsewhere, or an
input without a batch axis of 1 in front leaves the nodes alone. One walk over the
InstanceNormalization nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.lowering.common import layer
from converter.rewrite.patterns import other, sole_reader


def _per_channel(value: np.ndarray | None, rank: int, channels: int) -> np.ndarray | None:
    """A float32 constant that broadcasts over (1, C, ...) along the channel axis only, as C values."""
    if value is None or value.dtype != np.float32 or value.ndim > rank:
        return None
    full = value.reshape((1,) * (rank - value.ndim) + value.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != 1) or full.shape[1] not in (1, channels):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)).astype(np.float32)


def _match(graph: Graph, norm: Node):
    """(x, groups, eps, gamma, beta, nodes, output) for an InstanceNormalization inside the pattern."""
    first = graph.producer(norm.inputs[0])
    if (first is None or first.op != "Reshape" or first.ncnn
            or sole_reader(graph, first.outputs[0], "InstanceNormalization") is not norm):
        return None
    x = graph.tensors[first.inputs[0]]
    r = graph.tensors[first.outputs[0]]
    if (x.shape is None or None in x.shape or x.rank not in (3, 4) or x.batch_axis != 0 or x.shape[0] != 1
            or x.dtype != np.float32 or r.shape is None or r.rank != 3 or r.shape[0] != 1):
        return None
    channels, groups = x.shape[1], r.shape[1]
    if groups is None or groups < 1 or channels % groups or r.shape[2] != int(np.prod(x.shape)) // groups:
        return None
    scale, bias = (graph.value(n) for n in norm.inputs[1:3])
    if scale is None or bias is None or scale.size != groups or bias.size != groups:
        return None
    back = sole_reader(graph, norm.outputs[0], "Reshape")
    if back is None or back.inputs[0] != norm.outputs[0] or graph.tensors[back.outputs[0]].shape != x.shape:
        return None
    per_group = channels // groups
    gamma = np.repeat(scale.astype(np.float32).reshape(-1), per_group)
    beta = np.repeat(bias.astype(np.float32).reshape(-1), per_group)
    nodes, y = [first, norm, back], back.outputs[0]
    for op in ("Mul", "Add"):
        node = sole_reader(graph, y, op)
        const = None if node is None else other(node, y)
        value = _per_channel(None if const is None else graph.value(const), x.rank, channels)
        if value is None or graph.tensors[node.outputs[0]].shape != x.shape:
            continue
        if op == "Mul":
            gamma, beta = gamma * value, beta * value
        else:
            beta = beta + value
        nodes.append(node)
        y = node.outputs[0]
    return x.name, groups, float(norm.attrs["epsilon"]), gamma, beta, nodes, y


def fuse_groupnorm(graph: Graph) -> dict:
    fused = 0
    for norm in graph.onnx_nodes_of("InstanceNormalization"):
        found = _match(graph, norm)
        if found is None:
            continue
        x, groups, eps, gamma, beta, nodes, y = found
        channels = graph.tensors[x].shape[1]
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(layer(norm, graph, "GroupNorm", [x], [y], {0: groups, 1: channels, 2: eps, 3: 1},
                             [gamma, beta], suffix="_groupnorm"))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"groupnorm_fused": fused}

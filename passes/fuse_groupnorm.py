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
InstanceNormalization nodes (converter/rewrite/driver.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.lowering.common import layer
from converter.rewrite.driver import Match, apply, need, rule
from converter.rewrite.patterns import other, sole_reader


def _per_channel(value: np.ndarray | None, rank: int, channels: int) -> np.ndarray | None:
    """A float32 constant that broadcasts over (1, C, ...) along the channel axis only, as C values."""
    if value is None or value.dtype != np.float32 or value.ndim > rank:
        return None
    full = value.reshape((1,) * (rank - value.ndim) + value.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != 1) or full.shape[1] not in (1, channels):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)).astype(np.float32)


def _match(graph: Graph, norm: Node) -> Match:
    """The Reshape -> InstanceNormalization -> Reshape [-> Mul] [-> Add] around `norm`."""
    first = graph.producer(norm.inputs[0])
    need(first is not None and first.op == "Reshape" and not first.ncnn
         and sole_reader(graph, first.outputs[0], "InstanceNormalization") is norm,
         "the input is not a Reshape read by this InstanceNormalization only")
    x = graph.tensors[first.inputs[0]]
    r = graph.tensors[first.outputs[0]]
    need(x.shape is not None and None not in x.shape and x.rank in (3, 4) and x.batch_axis == 0 and x.shape[0] == 1
         and x.dtype == np.float32 and r.shape is not None and r.rank == 3 and r.shape[0] == 1,
         "the Reshape does not take a static float32 (1, C, ...) x to (1, G, -1)")
    channels, groups = x.shape[1], r.shape[1]
    need(groups is not None and groups >= 1 and not channels % groups
         and r.shape[2] == int(np.prod(x.shape)) // groups, "the groups do not divide the channels")
    scale, bias = (graph.value(n) for n in norm.inputs[1:3])
    need(scale is not None and bias is not None and scale.size == groups and bias.size == groups,
         "the scale and bias are not constants of one value per group")
    back = sole_reader(graph, norm.outputs[0], "Reshape")
    need(back is not None and back.inputs[0] == norm.outputs[0] and graph.tensors[back.outputs[0]].shape == x.shape,
         "the result is not reshaped back to x's shape (and read nowhere else)")
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
    return Match(nodes, x=x.name, groups=groups, channels=channels, eps=float(norm.attrs["epsilon"]),
                 gamma=gamma, beta=beta, y=y, norm=norm)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [layer(m.norm, graph, "GroupNorm", [m.x], [m.y], {0: m.groups, 1: m.channels, 2: m.eps, 3: 1},
                  [m.gamma, m.beta], suffix="_groupnorm")]


RULE = rule("fuse_groupnorm", "groupnorm_fused", "InstanceNormalization", _match, _build)


def fuse_groupnorm(graph: Graph) -> dict:
    return apply(graph, RULE)

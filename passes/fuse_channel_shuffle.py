"""Fuse a channel shuffle written as Reshape -> Transpose -> Reshape into one ncnn ShuffleChannel:

    y = Reshape(Transpose(Reshape(x, (1, G, C/G, ...)), perm swapping axes 1 and 2), shape of x)

(ShuffleNet's channel_shuffle). Lowered one by one the 5-D middle is merged to 4 axes and costs
two Reshapes and a Permute (shufflenet_v2: 1.22x the time of pnnx's file, which writes
ShuffleChannel). The three nodes are checked by running them on an array of element indexes: the
result must be ncnn's shuffle of x's channels in G groups. x needs a batch axis of 1 in front and
one or two more axes after the channels (ncnn shuffles only the c axis of a 3-D or 4-D blob).
Every intermediate must be read only inside the match. One walk over the Transpose nodes
(converter/rewrite/driver.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.lowering.common import layer
from converter.rewrite.driver import Match, apply, need, rule
from converter.rewrite.patterns import sole_reader


def _shuffled(channels: int, rest: int, groups: int) -> np.ndarray:
    """ncnn's ShuffleChannel (reverse 0) of an index array (channels, rest)."""
    return np.arange(channels * rest).reshape(groups, channels // groups, rest).transpose(1, 0, 2).reshape(-1)


def _match(graph: Graph, transpose: Node) -> Match:
    first = graph.producer(transpose.inputs[0])
    need(first is not None and first.op == "Reshape" and not first.ncnn
         and sole_reader(graph, first.outputs[0], "Transpose") is transpose,
         "the input is not a Reshape read by this Transpose only")
    back = sole_reader(graph, transpose.outputs[0], "Reshape")
    x = graph.tensors[first.inputs[0]]
    split = graph.tensors[first.outputs[0]]
    need(back is not None and back.inputs[0] == transpose.outputs[0], "the output is not read by one Reshape only")
    need(x.shape is not None and None not in x.shape and x.rank in (4, 5) and x.batch_axis == 0 and x.shape[0] == 1
         and split.shape is not None and None not in split.shape and split.rank >= 3
         and graph.tensors[back.outputs[0]].shape == x.shape,
         "not a static (1, C, H[, W]) x split and reshaped back to its shape")
    perm = transpose.attrs.get("perm")
    groups, channels = split.shape[1], x.shape[1]
    need(perm is not None and groups >= 2 and not channels % groups
         and int(np.prod(split.shape)) == int(np.prod(x.shape)), "the channels are not split in groups")
    index = np.arange(int(np.prod(x.shape))).reshape(split.shape).transpose(perm).reshape(-1)
    need(np.array_equal(index, _shuffled(channels, index.size // channels, groups)),
         f"the Transpose {perm} does not shuffle the channels in {groups} groups")
    return Match([first, transpose, back], x=x.name, groups=groups, y=back.outputs[0], transpose=transpose)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [layer(m.transpose, graph, "ShuffleChannel", [m.x], [m.y], {0: m.groups, 1: 0}, suffix="_shuffle")]


RULE = rule("fuse_channel_shuffle", "channel_shuffle_fused", "Transpose", _match, _build)


def fuse_channel_shuffle(graph: Graph) -> dict:
    return apply(graph, RULE)

"""Fuse a channel shuffle written as Reshape -> Transpose -> Reshape into one ncnn ShuffleChannel:

    y = Reshape(Transpose(Reshape(x, (1, G, C/G, ...)), perm swapping axes 1 and 2), shape of x)

(ShuffleNet's channel_shuffle). Lowered one by one the 5-D middle is merged to 4 axes and costs
two Reshapes and a Permute (shufflenet_v2: 1.22x the time of pnnx's file, which writes
ShuffleChannel). The three nodes are checked by running them on an array of element indexes: the
result must be ncnn's shuffle of x's channels in G groups. x needs a batch axis of 1 in front and
one or two more axes after the channels (ncnn shuffles only the c axis of a 3-D or 4-D blob).
Every intermediate must be read only inside the match. One walk over the Transpose nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.lowering.common import layer
from converter.rewrite.patterns import sole_reader


def _shuffled(channels: int, rest: int, groups: int) -> np.ndarray:
    """ncnn's ShuffleChannel (reverse 0) of an index array (channels, rest)."""
    return np.arange(channels * rest).reshape(groups, channels // groups, rest).transpose(1, 0, 2).reshape(-1)


def _match(graph: Graph, transpose: Node) -> tuple[str, int, list[Node], str] | None:
    first = graph.producer(transpose.inputs[0])
    if (first is None or first.op != "Reshape" or first.ncnn
            or sole_reader(graph, first.outputs[0], "Transpose") is not transpose):
        return None
    back = sole_reader(graph, transpose.outputs[0], "Reshape")
    x = graph.tensors[first.inputs[0]]
    split = graph.tensors[first.outputs[0]]
    if (back is None or back.inputs[0] != transpose.outputs[0] or x.shape is None or None in x.shape
            or x.rank not in (4, 5) or x.batch_axis != 0 or x.shape[0] != 1 or split.shape is None
            or None in split.shape or split.rank < 3 or graph.tensors[back.outputs[0]].shape != x.shape):
        return None
    perm = transpose.attrs.get("perm")
    groups, channels = split.shape[1], x.shape[1]
    if perm is None or groups < 2 or channels % groups or int(np.prod(split.shape)) != int(np.prod(x.shape)):
        return None
    index = np.arange(int(np.prod(x.shape))).reshape(split.shape).transpose(perm).reshape(-1)
    if not np.array_equal(index, _shuffled(channels, index.size // channels, groups)):
        return None
    return x.name, groups, [first, transpose, back], back.outputs[0]


def fuse_channel_shuffle(graph: Graph) -> dict:
    fused = 0
    for transpose in graph.onnx_nodes_of("Transpose"):
        found = _match(graph, transpose)
        if found is None:
            continue
        x, groups, nodes, y = found
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(layer(transpose, graph, "ShuffleChannel", [x], [y], {0: groups, 1: 0}, suffix="_shuffle"))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"channel_shuffle_fused": fused}

"""Concat -> ncnn Concat over the matching ncnn axis."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, ncnn_axis, new_tensor, require_float, reshape_layer


@lowers("Concat")
def concat(graph: Graph, node: Node) -> list[Node]:
    out = graph.tensors[node.outputs[0]]
    inputs = [i for i in node.inputs if i]
    axis = ncnn_axis(graph, node, out.name, int(node.attrs["axis"]))
    rank = len(out.ncnn_shape)
    operands, layers = [], []
    for name in inputs:
        t = graph.tensors[name]
        if t.is_constant and out.batch_axis is not None:
            if t.value.ndim != out.rank or t.value.shape[out.batch_axis] != 1:
                raise fail(node, graph, f"constant input '{name}' {list(t.value.shape)} does not have the "
                                        f"output's rank {out.rank} with extent 1 at axis {out.batch_axis}")
            # a constant has no batch axis: drop the output's (extent-1) one from its value
            name = graph.add_constant(f"{name}_nobatch", np.squeeze(t.value, out.batch_axis)).name
        elif _batch_moves(t, out):
            # an input that lost its batch axis (a flatten and gather on the way) has it back: ncnn drops
            # the extent-1 axis by a Reshape, the same numbers in the output's layout
            moved = new_tensor(graph, f"{name}_batch", t.shape, out.batch_axis)
            layers.append(reshape_layer(graph, node, name, moved, {}, suffix=f"_batch{len(layers)}"))
            name = moved
        elif t.shape is None or len(t.ncnn_shape) != rank:
            raise fail(node, graph, f"input '{name}' {t.shape} (batch axis {t.batch_axis}) does not "
                                    f"have the output's layout {out.shape} (batch axis {out.batch_axis})")
        operands.append(name)
    # integers and bools are float numbers in ncnn (or int32 bits, which int_inputs.py tracks): a copy keeps them
    require_float(graph, node, [i for i in inputs if graph.tensors[i].dtype.kind not in "biu"])
    if len(operands) == 1:
        return layers + [layer(node, graph, "Noop", operands, [out.name])]
    return layers + [layer(node, graph, "Concat", operands, [out.name], {0: axis})]


def _batch_moves(t, out) -> bool:
    """t has the output's axes but another batch axis, at an axis of extent 1 in both layouts."""
    return (t.shape is not None and not t.is_constant and t.rank == out.rank and t.batch_axis != out.batch_axis
            and all(a is None or t.shape[a] == 1 for a in (t.batch_axis, out.batch_axis)))



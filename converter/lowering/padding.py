"""ONNX Pad -> ncnn Padding (constant / edge / reflect).

ncnn pads w (left/right), h (top/bottom) and the outermost axis of a 3-D blob (c) or
the d axis of a 4-D one (front/behind): every axis but a 4-D blob's c. Pads must be
constants and non-negative; the batch axis takes none.
"""
from __future__ import annotations

from ..ir import Graph, Node
from ..ncnn_layers import AXIS_NAMES
from . import lowers
from .common import fail, layer, optional_constant

MODES = {"constant": 0, "edge": 1, "reflect": 2}
# ncnn Padding param ids of the (before, after) pads of each named axis
PAD_IDS = {"h": (0, 1), "w": (2, 3), "c": (7, 8), "d": (7, 8)}


def _pads(graph: Graph, node: Node, rank: int) -> list[int]:
    pads = node.attrs.get("pads")
    if pads is None:
        value = optional_constant(graph, node, 1, "pads")
        if value is None:
            raise fail(node, graph, "Pad needs pads")
        pads = value.reshape(-1).tolist()
    pads = [int(p) for p in pads]
    axes = optional_constant(graph, node, 3, "axes") if len(node.inputs) > 3 else None
    if axes is None:
        if len(pads) != 2 * rank:
            raise fail(node, graph, f"{len(pads)} pads for rank {rank}")
        return pads
    full = [0] * (2 * rank)
    axes = [int(a) % rank for a in axes.reshape(-1)]
    for k, a in enumerate(axes):
        full[a], full[rank + a] = pads[k], pads[len(axes) + k]
    return full


def _fill_value(graph: Graph, node: Node) -> float:
    if "value" in node.attrs:
        return float(node.attrs["value"])
    value = optional_constant(graph, node, 2, "constant_value") if len(node.inputs) > 2 else None
    return 0.0 if value is None or value.size == 0 else float(value.reshape(-1)[0])


@lowers("Pad")
def pad(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    mode = node.attrs.get("mode", "constant")
    if mode not in MODES:
        raise fail(node, graph, f"Pad mode '{mode}' has no ncnn Padding type")
    pads = _pads(graph, node, x.rank)
    if any(p < 0 for p in pads):
        raise fail(node, graph, f"negative pads {pads} (cropping) are not supported")
    params: dict[int, object] = {4: MODES[mode]}
    if mode == "constant":
        params[5] = _fill_value(graph, node)
    nc_rank = len(x.ncnn_shape)
    for axis in range(x.rank):
        before, after = pads[axis], pads[x.rank + axis]
        if not before and not after:
            continue
        nc_axis = x.ncnn_axis(axis)
        if nc_axis is None:
            raise fail(node, graph, f"pads {pads} pad the batch axis {axis}; ncnn has no batch axis")
        name = AXIS_NAMES[nc_rank][nc_rank - 1 - nc_axis]
        if name not in PAD_IDS or (name == "c" and nc_rank == 4):
            raise fail(node, graph, f"pads {pads} pad the channel axis of a 4-D blob, which ncnn's Padding cannot")
        if mode == "reflect" and x.shape[axis] is not None and max(before, after) >= x.shape[axis]:
            raise fail(node, graph, f"reflect pads {pads} are not smaller than extent {x.shape[axis]}")
        first, second = PAD_IDS[name]
        params[first], params[second] = before, after
    if len(params) <= 2:
        return [layer(node, graph, "Noop", [x.name], [node.outputs[0]])]
    return [layer(node, graph, "Padding", [x.name], [node.outputs[0]], params)]

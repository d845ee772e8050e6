"""Pad -> ncnn Padding (constant 0, edge 1 = replicate, reflect 2), with a Crop before it for
negative pads.

ncnn Padding pads w (left/right), h (top/bottom) and the third axis from the
inside (front/behind: c of a 3-D blob, d of a 4-D one); a 4-D blob's
channel axis cannot be padded. Negative pads remove values: Crop runs first,
which gives ONNX's result since each side either pads or crops and a
reflection only reads values inside the kept range.
"""
from __future__ import annotations

from converter.shapes.symbolic import SHAPE_TERMS

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, new_tensor, optional_constant, require_float

PAD_TYPES = {"constant": 0, "edge": 1, "reflect": 2}
# Padding's (begin, end) param ids per ncnn axis, innermost first
PAD_IDS = {"w": (2, 3), "h": (0, 1), "inner3": (7, 8)}
INT32_MAX = 2**31 - 1


@lowers("Pad")
def pad(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x, out = graph.tensors[node.inputs[0]], node.outputs[0]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    if SHAPE_TERMS in node.meta:      # left by resolve_symbolic_extents: not provably a crop
        raise fail(node, graph, "pads computed at run time from tensor sizes that can be positive; ncnn's "
                                "Padding takes constant pads only (give the input size with --input-shape)")
    mode = node.attrs["mode"]
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode not in PAD_TYPES:
        raise fail(node, graph, f"mode {mode!r}: ncnn Padding has constant, edge and reflect only")
    begin, end = _onnx_pads(graph, node, x.rank)
    batch = x.batch_axis
    if batch is not None and (begin[batch] or end[batch]):
        raise fail(node, graph, f"pads {begin + end} change the batch axis {x.batch_axis}, which ncnn does not have")
    params = {4: PAD_TYPES[mode], 5: _constant_value(graph, node)}
    crops: list[tuple[int, int, int]] = []         # (ncnn axis, start, end)
    for axis in range(x.rank):
        if axis == x.batch_axis or not (begin[axis] or end[axis]):
            continue
        ncnn_axis, extent = x.ncnn_axis(axis), x.shape[axis]
        b, e = max(begin[axis], 0), max(end[axis], 0)
        kept = None if extent is None else extent + min(begin[axis], 0) + min(end[axis], 0)
        if mode == "reflect" and kept is not None and max(b, e) >= kept:
            raise fail(node, graph, f"reflect pads {b}, {e} on axis {axis} need more than {kept} values")
        if b or e:
            ids = _pad_ids(graph, node, x, ncnn_axis)
            params.update({ids[0]: b, ids[1]: e})
        if begin[axis] < 0 or end[axis] < 0:
            crop_end = end[axis] if end[axis] < 0 else (extent if extent is not None else INT32_MAX)
            crops.append((ncnn_axis, -min(begin[axis], 0), crop_end))
    nodes, source = [], x.name
    if crops:
        cropped_shape = tuple(n if n is None or i == x.batch_axis else n + min(begin[i], 0) + min(end[i], 0)
                              for i, n in enumerate(x.shape))
        if any(n is not None and n <= 0 for n in cropped_shape):
            raise fail(node, graph, f"negative pads {begin + end} leave nothing of {list(x.shape)}")
        padded = any(v > 0 for v in begin + end)
        cropped = new_tensor(graph, f"{out}_cropped", cropped_shape, x.batch_axis) if padded else out
        starts, ends, axes = (list(v) for v in zip(*[(s, e, a) for a, s, e in crops]))
        nodes.append(layer(node, graph, "Crop", [source], [cropped], {9: starts, 10: ends, 11: axes},
                           suffix="_crop"))
        if not padded:
            return nodes
        source = cropped
    if not any(v > 0 for v in begin + end):
        return [layer(node, graph, "Noop", [source], [out])]
    return nodes + [layer(node, graph, "Padding", [source], [out], params)]


def _onnx_pads(graph: Graph, node: Node, rank: int) -> tuple[list[int], list[int]]:
    """Per-axis (begin, end) pads from the attribute (opset < 11) or the pads/axes inputs."""
    if "pads" in node.attrs:
        pads, axes = [int(v) for v in node.attrs["pads"]], list(range(rank))
    else:
        value = optional_constant(graph, node, 1, "pads (input 1)")
        if value is None:
            raise fail(node, graph, "pads is missing")
        pads = [int(v) for v in value.reshape(-1)]
        axes_value = optional_constant(graph, node, 3, "axes (input 3)")
        axes = list(range(rank)) if axes_value is None else [int(a) for a in axes_value.reshape(-1)]
    if len(pads) != 2 * len(axes) or any(not -rank <= a < rank for a in axes):
        raise fail(node, graph, f"pads {pads} do not fit axes {axes} of a rank-{rank} input")
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis % rank], end[axis % rank] = pads[i], pads[i + len(axes)]
    return begin, end


def _constant_value(graph: Graph, node: Node) -> float:
    if "value" in node.attrs:
        return float(node.attrs["value"])
    value = optional_constant(graph, node, 2, "constant_value (input 2)")
    return 0.0 if value is None or value.size == 0 else float(value.reshape(-1)[0])


def _pad_ids(graph: Graph, node: Node, x, ncnn_axis: int) -> tuple[int, int]:
    """Padding's (begin, end) param ids for a numpy-order axis of the ncnn blob."""
    rank = len(x.ncnn_shape)
    from_inside = rank - 1 - ncnn_axis
    if from_inside == 0:
        return PAD_IDS["w"]
    if from_inside == 1:
        return PAD_IDS["h"]
    if from_inside == 2:
        return PAD_IDS["inner3"]
    raise fail(node, graph, f"padding the channel axis of a 4-axis ncnn blob ({list(x.shape)}, batch axis "
                            f"{x.batch_axis}) is not supported by ncnn Padding")

"""ScatterND / ScatterElements: ncnn has no scatter layer.

Masks built by scatter (Swin's shifted-window mask: zeros of the feature map's size with
window ids written in) fold in passes/fold_constants.py once every input is a constant.
With constant indices into run-time data (a slice assignment, x[..., 1:3] = y) every output
element is known at conversion time to come from one element of the data or of the updates:
the output is a constant-index Gather (Crop runs, Concat) of the data and updates laid end to
end, so the numbers are copied exactly. Where the written elements form one box (a slice on each
axis, x[:, :, 1, 2:4] = y), the output is Concats of the data around the box, one per axis cut. Anything else is refused in one line that names what
is known only at run time; --input-shape fixes the common case, a buffer sized by an input.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import depends_on, fail, layer, ncnn_axis, new_tensor, reshape_layer
from .gather import _pick


def _static(graph: Graph, node: Node, name: str, what: str) -> Tensor:
    t = graph.tensors[name]
    if t.shape is None or None in t.shape:
        raise fail(node, graph, f"the {what} '{name}' has unknown extents; give static input shapes with --input-shape")
    if t.batch_axis is not None and t.shape[t.batch_axis] != 1:
        raise fail(node, graph, f"the {what}'s batch axis is {t.shape[t.batch_axis]}, not 1")
    return t


def _sources(data_shape, indices: np.ndarray, slice_size: int) -> np.ndarray:
    """For each output element, its position in data ++ updates (later writes win, as in onnxruntime)."""
    total = math.prod(data_shape)
    source = np.arange(total, dtype=np.int64)
    depth = indices.shape[-1]
    starts = np.ravel_multi_index(np.moveaxis(indices.reshape(-1, depth), -1, 0), data_shape[:depth]) * slice_size
    for q, start in enumerate(starts):
        source[start:start + slice_size] = total + q * slice_size + np.arange(slice_size)
    return source


def _box(shape, source: np.ndarray, total: int, updates: int) -> list[tuple[int, int]] | None:
    """Per axis the range [start, end) when the written elements are exactly one box (a slice on
    each axis), filled by all the updates in order (x[:, :, 1, 2:4] = y); else None."""
    written = (source >= total).reshape(shape)
    ranges = []
    for a in range(len(shape)):
        touched = np.flatnonzero(written.any(axis=tuple(b for b in range(len(shape)) if b != a)))
        if not len(touched) or touched[-1] + 1 - touched[0] != len(touched):
            return None
        ranges.append((int(touched[0]), int(touched[-1]) + 1))
    box = tuple(slice(a, b) for a, b in ranges)
    inside = source.reshape(shape)[box]
    if inside.size != updates or not written[box].all() or int(written.sum()) != inside.size or \
            not np.array_equal(inside.reshape(-1), total + np.arange(inside.size)):
        return None
    return ranges


def _assign_box(graph: Graph, node: Node, data: Tensor, updates: Tensor, out: Tensor,
                ranges: list[tuple[int, int]]) -> list[Node]:
    """Along each axis the box cuts, outermost first: Concat of the data before the box, the box
    (the next axis's Concat, or the updates), the data after it; the data is cropped to the box on
    the axes already cut."""
    cut = [a for a, (start, end) in enumerate(ranges) if (start, end) != (0, data.shape[a])]
    layers: list[Node] = []
    shape = list(data.shape)

    def assign(level: int, current: str, target: str) -> None:
        axis, (start, end) = cut[level], ranges[cut[level]]
        nc_axis = ncnn_axis(graph, node, data.name, axis)
        pieces = []
        for k, (a, b) in enumerate(((0, start), (end, data.shape[axis]))):
            if a == b:
                continue
            piece = new_tensor(graph, f"{out.name}_kept{level}_{k}", (*shape[:axis], b - a, *shape[axis + 1:]),
                               data.batch_axis)
            layers.append(layer(node, graph, "Crop", [current], [piece], {9: [a], 10: [b], 11: [nc_axis]},
                                suffix=f"_kept{level}_{k}"))
            pieces.append(piece)
        shape[axis] = end - start
        middle = new_tensor(graph, f"{out.name}_written{level}", tuple(shape), data.batch_axis)
        if level == len(cut) - 1:
            layers.append(reshape_layer(graph, node, updates.name, middle, {}, suffix="_written"))
        else:
            inner = new_tensor(graph, f"{out.name}_box{level}", tuple(shape), data.batch_axis)
            layers.append(layer(node, graph, "Crop", [current], [inner], {9: [start], 10: [end], 11: [nc_axis]},
                                suffix=f"_box{level}"))
            assign(level + 1, inner, middle)
        pieces.insert(1 if start else 0, middle)
        if len(pieces) == 1:
            layers.append(layer(node, graph, "Noop", pieces, [target], suffix=f"_all{level}"))
        else:
            layers.append(layer(node, graph, "Concat", pieces, [target], {0: nc_axis}, suffix=f"_assign{level}"))
    assign(0, data.name, out.name)
    return layers


def _copy_scatter(graph: Graph, node: Node, indices: np.ndarray) -> list[Node]:
    data = _static(graph, node, node.inputs[0], "data")
    updates = _static(graph, node, node.inputs[2], "updates")
    out = graph.tensors[node.outputs[0]]
    depth = indices.shape[-1]
    extents = np.array(data.shape[:depth], np.int64)
    if np.any(indices < -extents) or np.any(indices >= extents):
        raise fail(node, graph, f"an index is out of range for the data's extents {extents.tolist()}")
    indices = np.where(indices < 0, indices + extents, indices)
    total, slice_size = math.prod(data.shape), math.prod(data.shape[depth:])
    source = _sources(data.shape, indices, slice_size)
    ranges = _box(data.shape, source, total, math.prod(updates.shape))
    if ranges is not None and any(r != (0, n) for r, n in zip(ranges, data.shape)):
        return _assign_box(graph, node, data, updates, out, ranges)
    pieces = []
    for t in (data, updates):
        flat = new_tensor(graph, f"{t.name}_flat", (math.prod(t.shape),), None)
        pieces.append((reshape_layer(graph, node, t.name, flat, {}, suffix=f"_flat{len(pieces)}"), flat))
    pool = graph.tensors[new_tensor(graph, f"{out.name}_pool", (total + math.prod(updates.shape),), None)]
    picked = graph.tensors[new_tensor(graph, f"{out.name}_picked", (total,), None)]
    layers = [p for p, _ in pieces]
    layers.append(layer(node, graph, "Concat", [f for _, f in pieces], [pool.name], {0: 0}, suffix="_pool"))
    layers += _pick(graph, node, pool, picked, 0, source)
    layers.append(reshape_layer(graph, node, picked.name, out.name, {}, suffix="_unflatten"))
    return layers


@lowers("ScatterND", "ScatterElements", "Scatter")
def scatter(graph: Graph, node: Node) -> list[Node]:
    indices = graph.value(node.inputs[1])
    # .get: reduction exists from opset 16
    if node.op == "ScatterND" and indices is not None and node.attrs.get("reduction", "none") == "none":
        return _copy_scatter(graph, node, indices.astype(np.int64))
    runtime = next(name for name in node.inputs if name and graph.value(name) is None)
    why = (f"'{runtime}' is a graph input, known only at run time" if runtime in graph.inputs
           else depends_on(graph, runtime))
    raise fail(node, graph, f"ncnn has no scatter layer; this folds to a constant when its data, indices "
                            f"and updates are constants, but {why}")

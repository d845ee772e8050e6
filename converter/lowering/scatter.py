"""ScatterND / ScatterElements: ncnn has no scatter layer.

Masks built by scatter (Swin's shifted-window mask: zeros of the feature map's size with
window ids written in) fold in passes/fold_constants.py once every input is a constant.
With constant indices into run-time data (a slice assignment, x[..., 1:3] = y) every output
element is known at conversion time to come from one element of the data or of the updates:
the output is a constant-index Gather (Crop runs, Concat) of the data and updates laid end to
end, so the numbers are copied exactly. Anything else is refused in one line that names what
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


def _slice_axis(shape, source: np.ndarray, total: int) -> tuple[int, int, int] | None:
    """(axis, start, end) when the written elements are the slice [start, end) of one axis, every
    other axis whole, filled by the updates in order (a slice assignment); else None."""
    written = (source >= total).reshape(shape)
    touched = [np.flatnonzero(written.any(axis=tuple(b for b in range(len(shape)) if b != a)))
               for a in range(len(shape))]
    partial = [a for a, t in enumerate(touched) if len(t) != shape[a]]
    if len(partial) != 1:
        return None
    axis = partial[0]
    start, end = int(touched[axis][0]), int(touched[axis][-1]) + 1
    box = tuple(slice(start, end) if a == axis else slice(None) for a in range(len(shape)))
    inside = source.reshape(shape)[box]
    if end - start != len(touched[axis]) or not written[box].all() or \
            not np.array_equal(inside.reshape(-1), total + np.arange(inside.size)):
        return None
    return axis, start, end


def _assign_slice(graph: Graph, node: Node, data: Tensor, updates: Tensor, out: Tensor,
                  axis: int, start: int, end: int) -> list[Node]:
    """Concat along `axis` of the data before the slice, the updates, the data after it."""
    nc_axis = ncnn_axis(graph, node, data.name, axis)
    piece_shape = lambda a, b: tuple(b - a if i == axis else d for i, d in enumerate(data.shape))
    layers, pieces = [], []
    for k, (a, b) in enumerate(((0, start), (end, data.shape[axis]))):
        if a == b:
            continue
        piece = new_tensor(graph, f"{out.name}_kept{k}", piece_shape(a, b), data.batch_axis)
        layers.append(layer(node, graph, "Crop", [data.name], [piece], {9: [a], 10: [b], 11: [nc_axis]},
                            suffix=f"_kept{k}"))
        pieces.append(piece)
    middle = new_tensor(graph, f"{out.name}_written", piece_shape(start, end), data.batch_axis)
    layers.append(reshape_layer(graph, node, updates.name, middle, {}, suffix="_written"))
    pieces.insert(1 if start else 0, middle)
    if len(pieces) == 1:
        return layers + [layer(node, graph, "Noop", pieces, [out.name], suffix="_all")]
    return layers + [layer(node, graph, "Concat", pieces, [out.name], {0: nc_axis}, suffix="_assign")]


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
    found = _slice_axis(data.shape, source, total)
    if found is not None:
        return _assign_slice(graph, node, data, updates, out, *found)
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

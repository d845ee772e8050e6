"""GatherND / GatherElements with constant indices -> a flat Gather (Crop runs, Concat, Reshape).

Both pick single elements (GatherElements) or trailing slices (GatherND) at positions known
when converting. Flattening the indexed leading axes of the data turns every position into
one linear index, so both become Gather(Reshape(data, (n, *rest)), linear, axis=0), lowered as
constant-index Gather is (consecutive indices are one Crop). Exporters emit them with
constant indices for position ids and mask expansion (torch.export's BERT mask: GatherND of
the attention mask at [[0, 0], [0, 1], ...]).

Indices computed at run time are refused: ncnn has no gather by run-time positions (its
Embed reads row ids from an integer graph input only, see gather.py).
"""
from __future__ import annotations

import math

import numpy as np

from converter.ncnn_side.layers import UNARY_OPS

from ..ir import Graph, Node, Tensor
from . import LOWERINGS, lowers
from .common import fail, layer, new_tensor, reshape_layer
from .gather import MAX_GATHER_PIECES, _pick, _runs
from .one_hot_gather import one_hot_gather
from .select_matmul import select_by_matmul


def _static_data(graph: Graph, node: Node) -> Tensor:
    data = graph.tensors[node.inputs[0]]
    if data.shape is None or None in data.shape:
        raise fail(node, graph, f"the data '{data.name}' has unknown extents; give static input shapes "
                                "with --input-shape")
    if data.batch_axis is not None and data.shape[data.batch_axis] != 1:
        raise fail(node, graph, f"the data's batch axis {data.batch_axis} is {data.shape[data.batch_axis]}, "
                                "not 1: ncnn cannot index across the batch")
    return data


def _constant_indices(graph: Graph, node: Node) -> np.ndarray:
    indices = graph.value(node.inputs[1])
    if indices is None:
        raise fail(node, graph, f"the indices '{node.inputs[1]}' are computed at run time; ncnn has no "
                                "layer that gathers at run-time positions")
    return indices.astype(np.int64)


def _wrap(graph: Graph, node: Node, indices: np.ndarray, extents) -> np.ndarray:
    """Negative indices count from the end; out-of-range ones are an error, as in onnxruntime."""
    extents = np.asarray(extents, np.int64)
    wrapped = np.where(indices < 0, indices + extents, indices)
    if np.any(wrapped < 0) or np.any(wrapped >= extents):
        raise fail(node, graph, f"an index is out of range for the data's extents {extents.tolist()}")
    return wrapped


def _flat_gather(graph: Graph, node: Node, data: Tensor, merged: int, linear: np.ndarray) -> list[Node]:
    """Gather(Reshape(data, (prod(first `merged` extents), *rest)), linear, axis=0) into the output."""
    out = graph.tensors[node.outputs[0]]
    rest = tuple(data.shape[merged:])
    # a batch axis among the kept ones stays the batch axis (ncnn drops it on both sides of the Reshape)
    batch = None if data.batch_axis is None or data.batch_axis < merged else data.batch_axis - merged + 1
    flat = graph.tensors[new_tensor(graph, f"{data.name}_flat", (math.prod(data.shape[:merged]), *rest), batch)]
    flatten = reshape_layer(graph, node, data.name, flat.name, {}, suffix="_flatten")
    return [flatten, *_pick(graph, node, flat, out, 0, linear)]


def _runtime_gather_nd(graph: Graph, node: Node, data: Tensor, batch_dims: int) -> list[Node]:
    """Run-time index tuples: their linear positions (a dot product with the strides, plus the
    batch items' offsets), then a one-hot lookup in the data flattened to those positions."""
    index = graph.tensors[node.inputs[1]]
    if index.shape is None or None in index.shape:
        raise fail(node, graph, "the number of indices is unknown; give static input shapes with --input-shape")
    depth, merged = index.shape[-1], batch_dims + index.shape[-1]
    if None in data.shape:
        return _runtime_rows(graph, node, data, batch_dims, merged)
    strides = np.array([math.prod(data.shape[a + 1:merged]) for a in range(merged)], np.float32)
    lead = index.shape[:-1]
    lead_axis = index.batch_axis if index.batch_axis is not None and index.batch_axis < len(lead) else None
    extents = np.array(data.shape[batch_dims:merged], np.float32)
    like_index = [new_tensor(graph, f"{index.name}_{t}", index.shape, index.batch_axis)
                  for t in ("sign", "negative", "is_negative", "scaled", "wrap", "weighted")]
    sign, negative, is_negative, scaled, wrap, weighted = like_index
    linear = new_tensor(graph, f"{index.name}_linear", lead, lead_axis)
    origin = node.origin or node.name

    def onnx_node(op: str, inputs: list[str], output: str, **attrs) -> list[Node]:
        return LOWERINGS[op](graph, Node(f"{node.name}_{output}", op, inputs, [output], attrs, origin=origin))

    def const(tag: str, value: np.ndarray) -> str:
        return graph.add_constant(f"{index.name}_{tag}", value).name

    # a negative coordinate counts from the end of its own axis: + extent * (c < 0), then the strides
    layers = ([layer(node, graph, "UnaryOp", [index.name], [sign], {0: UNARY_OPS["sign"]}, suffix="_coordinate_sign")]
              + onnx_node("Neg", [sign], negative)
              + onnx_node("Relu", [negative], is_negative)
              + onnx_node("Mul", [index.name, const("strides", strides[batch_dims:])], scaled)
              + onnx_node("Mul", [is_negative, const("wraps", extents * strides[batch_dims:])], wrap)
              + onnx_node("Add", [scaled, wrap], weighted))
    summed = linear if not batch_dims else new_tensor(graph, f"{index.name}_in_item", lead, lead_axis)
    layers += LOWERINGS["ReduceSum"](graph, Node(f"{node.name}_position", "ReduceSum", [weighted], [summed],
                                                 {"axes": [-1], "keepdims": 0}, origin=origin))
    if batch_dims:      # item b of the batch starts at b * stride
        offsets = np.tensordot(np.indices(lead)[:batch_dims], strides[:batch_dims], axes=(0, 0)).astype(np.float32)
        layers += LOWERINGS["Add"](graph, Node(f"{node.name}_items", "Add", [
            summed, graph.add_constant(f"{index.name}_offsets", offsets).name], [linear], origin=origin))
    flat = graph.tensors[new_tensor(graph, f"{data.name}_flat", (math.prod(data.shape[:merged]),
                                                                  *data.shape[merged:]), None)]
    layers.append(reshape_layer(graph, node, data.name, flat.name, {}, suffix="_flatten"))
    return layers + one_hot_gather(graph, node, flat, graph.tensors[node.outputs[0]], 0, indices=linear)


def _runtime_rows(graph: Graph, node: Node, data: Tensor, batch_dims: int, merged: int) -> list[Node]:
    """Data of run-time length along the last indexed axis, every axis before it of extent 1 (CLIP's
    pooling reads a (1, S, D) hidden state at (0, argmax)): a coordinate on an extent-1 axis can only
    name row 0, so the last coordinate alone is the row, wrapped by the lookup at the run-time length."""
    lead = data.shape[:merged - 1]
    if batch_dims or any(d != 1 for d in lead) or None in data.shape[merged:]:
        raise fail(node, graph, f"the data '{data.name}' has unknown extents; give static input shapes "
                                "with --input-shape")
    index = graph.tensors[node.inputs[1]]
    row = new_tensor(graph, f"{index.name}_row", index.shape[:-1] + (1,), index.batch_axis)
    rows = graph.tensors[new_tensor(graph, f"{data.name}_rows", (None, *data.shape[merged:]), None)]
    start = graph.add_constant(f"{index.name}_last_start", np.array([merged - 1], np.int64)).name
    end = graph.add_constant(f"{index.name}_last_end", np.array([merged], np.int64)).name
    along = graph.add_constant(f"{index.name}_last_axis", np.array([-1], np.int64)).name
    origin = node.origin or node.name
    layers = LOWERINGS["Slice"](graph, Node(f"{node.name}_last", "Slice", [index.name, start, end, along], [row],
                                            origin=origin))
    layers.append(reshape_layer(graph, node, data.name, rows.name, {}, suffix="_flatten"))
    return layers + one_hot_gather(graph, node, rows, graph.tensors[node.outputs[0]], 0, indices=row)


@lowers("GatherND")
def gather_nd(graph: Graph, node: Node) -> list[Node]:
    data, batch_dims = graph.tensors[node.inputs[0]], int(node.attrs["batch_dims"])
    if graph.value(node.inputs[1]) is None and data.shape is not None and None in data.shape:
        return _runtime_gather_nd(graph, node, data, batch_dims)
    data = _static_data(graph, node)
    if graph.value(node.inputs[1]) is None:
        return _runtime_gather_nd(graph, node, data, batch_dims)
    indices = _constant_indices(graph, node)
    depth = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or batch_dims + depth > data.rank or indices.shape[:batch_dims] != data.shape[:batch_dims]:
        raise fail(node, graph, f"indices of shape {list(indices.shape)} with batch_dims {batch_dims} do not fit "
                                f"the data's shape {list(data.shape)}")
    merged = batch_dims + depth
    # the batch positions of each index tuple are its own leading coordinates
    batch_coords = np.indices(indices.shape[:-1])[:batch_dims]
    coords = [*batch_coords, *np.moveaxis(_wrap(graph, node, indices, data.shape[batch_dims:merged]), -1, 0)]
    linear = np.ravel_multi_index(coords, data.shape[:merged]) if merged else np.zeros(indices.shape[:-1], np.int64)
    return _flat_gather(graph, node, data, merged, linear)


def _row_lookup(graph: Graph, node: Node) -> list[Node] | None:
    """A constant data with one non-1 axis, read along it at run-time indices: out[j] = data[i[j]],
    a lookup in a one-column table (RoBERTa's position ids read a (1, 40) buffer so)."""
    data, indices = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    if not data.is_constant or graph.value(node.inputs[1]) is not None or data.rank is None:
        return None
    axis = int(node.attrs["axis"]) % data.rank
    if any(d != 1 for a, d in enumerate(data.shape) if a != axis) or indices.shape is None:
        return None
    table = Tensor(data.name, (data.shape[axis],), data.dtype, data.value.reshape(-1))
    return one_hot_gather(graph, node, table, graph.tensors[node.outputs[0]], 0)


@lowers("GatherElements")
def gather_elements(graph: Graph, node: Node) -> list[Node]:
    lookup = _row_lookup(graph, node)
    if lookup is not None:
        return lookup
    data, indices = _static_data(graph, node), _constant_indices(graph, node)
    axis = int(node.attrs["axis"])
    if not -data.rank <= axis < data.rank or indices.ndim != data.rank:
        raise fail(node, graph, f"indices of shape {list(indices.shape)} along axis {axis} do not fit the "
                                f"data's shape {list(data.shape)}")
    axis %= data.rank
    coords = list(np.indices(indices.shape))
    coords[axis] = _wrap(graph, node, indices, data.shape[axis])
    if any(i > d for i, d in zip(indices.shape, data.shape)):
        raise fail(node, graph, f"indices of shape {list(indices.shape)} exceed the data's {list(data.shape)}")
    linear = np.ravel_multi_index(coords, data.shape)
    if axis == data.rank - 1 and len(_runs(linear.reshape(-1).tolist())) > MAX_GATHER_PIECES:
        return select_by_matmul(graph, node, data, coords[axis])    # scattered rows (DeBERTa's c2p)
    return _flat_gather(graph, node, data, data.rank, linear)

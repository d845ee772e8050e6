"""GatherElements along the last axis at many scattered constant positions -> a product with
constant one-hot selection matrices.

DeBERTa's relative attention gathers each query row of its (query x relative-distance) scores
at its own distances: out[..., q, k] = data[..., q, idx[q, k]]. That is hundreds of separate
index runs, too many Crops; but per row it is data[..., q, :] @ S[q] with S[q][j, k] =
(idx[q, k] == j). The leading axes along which the indices never change (heads, the batch:
the exporter expands one index table over them) stay broadcast, so S holds one matrix per
varying row:

    data (B..., V..., n) -> (B, V, 1, n) @ S (V, n, m) -> (B, V, 1, m) -> the indices' shape

Each output sums one data value and exact zeros, so it is that value bit for bit while the data
is finite (0 * inf is NaN: the scores of a finite model are finite).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Tensor
from . import LOWERINGS
from .common import fail, new_tensor, reshape_layer

MAX_SELECTION = 1 << 22         # elements of the constant selection matrices


def _varying_axes(indices: np.ndarray) -> list[bool]:
    """For each leading axis: do the indices change along it?"""
    return [not np.all(indices == indices.take([0], axis=a)) for a in range(indices.ndim - 1)]


def select_by_matmul(graph: Graph, node: Node, data: Tensor, indices: np.ndarray) -> list[Node]:
    """out = GatherElements(data, indices, axis=-1) for wrapped constant `indices` of data's rank."""
    out = graph.tensors[node.outputs[0]]
    if tuple(indices.shape[:-1]) != tuple(data.shape[:-1]):
        raise fail(node, graph, f"indices of shape {list(indices.shape)} over data {list(data.shape)}: the "
                                "selection product needs the same leading extents")
    if data.is_constant or (data.dtype is not None and data.dtype.kind != "f"):
        raise fail(node, graph, "a selection product needs float data computed at run time")
    varying = _varying_axes(indices)
    first = varying.index(True) if any(varying) else len(varying)
    if not all(varying[first:]):
        first = 0                         # varying axes interleaved with constant ones: one matrix per row
    lead, rows = data.shape[:first], data.shape[first:-1]
    n, m = data.shape[-1], indices.shape[-1]
    b, v = math.prod(lead), math.prod(rows)
    if v * n * m > MAX_SELECTION:
        raise fail(node, graph, f"{indices.size} scattered positions: the selection matrices would need "
                                f"{v * n * m} elements (at most {MAX_SELECTION})")
    table = indices.reshape(-1, *rows, m)[0].reshape(v, m)    # the same along the broadcast axes
    selection = np.zeros((v, n, m), np.float32)
    selection[np.arange(v)[:, None], table, np.arange(m)[None, :]] = 1.0
    origin = node.origin or node.name
    rows_in = new_tensor(graph, f"{out.name}_rows", (b, v, 1, n), None)
    rows_out = new_tensor(graph, f"{out.name}_selected", (b, v, 1, m), None)
    weights = graph.add_constant(f"{out.name}_selection", selection).name
    return [reshape_layer(graph, node, data.name, rows_in, {}, suffix="_rows"),
            *LOWERINGS["MatMul"](graph, Node(f"{node.name}_select", "MatMul", [rows_in, weights], [rows_out],
                                             origin=origin)),
            reshape_layer(graph, node, rows_out, out.name, {}, suffix="_selected")]

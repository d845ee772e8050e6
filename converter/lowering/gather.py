"""ONNX Gather -> ncnn Crop (+ Concat, Reshape) or Embed.

Constant indices on a computed tensor pick slices: a run of consecutive indices is one Crop,
several runs are joined by a Concat, and a Reshape gives the indices' own shape (a scalar
index drops the axis). A constant table read at run-time indices is an embedding: ncnn's
Embed, which reads a 1-D blob of int32 word indices and clamps them to the table (ONNX
wraps negative indices and rejects out-of-range ones: ids must be in [0, rows)). The indices
must come from an integer graph input through layers that only move bits, and that input is
then fed to ncnn as int32 (converter/shapes/int_inputs.py).
"""
from __future__ import annotations

import numpy as np

from converter.shapes.int_inputs import readers

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import constant, fail, layer, ncnn_axis, ncnn_pairs, new_tensor, reshape_layer
from .gather_strided import progressions, strided_pieces
from .one_hot_gather import MAX_ONE_HOT, needs_one_hot, one_hot_gather

MAX_GATHER_PIECES = 16


@lowers("Gather")
def gather(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or out.shape is None:
        raise fail(node, graph, "the rank of the data or the output is unknown")
    if not x.shape:
        raise fail(node, graph, f"the data '{x.name}' is a scalar; Gather needs at least one axis")
    axis = int(node.attrs["axis"])
    if not -x.rank <= axis < x.rank:
        raise fail(node, graph, f"axis {axis} is out of range for rank {x.rank}")
    axis %= x.rank
    if x.is_constant and graph.value(node.inputs[1]) is None:
        if needs_one_hot(graph, node.inputs[1]):      # computed ids, or ids also read as numbers
            return one_hot_gather(graph, node, x, out, axis)
        return _embedding(graph, node, x, out, axis)
    if graph.value(node.inputs[1]) is None:       # run-time positions in a run-time tensor
        return one_hot_gather(graph, node, x, out, axis)
    return _pick(graph, node, x, out, axis, constant(graph, node, 1, "the indices"))


# ---- constant indices ----------------------------------------------------------------
def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of indices as (start, end) ranges, in order."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _wrapped(graph: Graph, node: Node, indices: np.ndarray, extent: int | None) -> list[int]:
    picked = []
    for i in (int(v) for v in indices.reshape(-1)):
        if i < 0 and extent is None:
            raise fail(node, graph, f"index {i} on an axis of unknown extent")
        j = i + extent if i < 0 else i
        if j < 0 or (extent is not None and j >= extent):
            raise fail(node, graph, f"index {i} is out of range for extent {extent}")
        picked.append(j)
    return picked


def _pick(graph: Graph, node: Node, x: Tensor, out: Tensor, axis: int, indices: np.ndarray) -> list[Node]:
    if axis == x.batch_axis and x.shape[axis] == 1 and indices.size == 1:
        _wrapped(graph, node, indices, 1)      # the one row of an extent-1 axis (an attention-pooled
        return [_index_shape(graph, node, x, out, axis, indices.ndim)]    # query's [:, 0]): a reshape
    nc_axis = ncnn_axis(graph, node, x.name, axis)
    if indices.size == 0:
        raise fail(node, graph, "no indices: ncnn cannot hold empty tensors")
    wrapped = _wrapped(graph, node, indices, x.shape[axis])
    picked_shape = tuple(indices.size if a == axis else d for a, d in enumerate(x.shape))
    # 1-D indices pick the output itself, when it has the data's batch axis (else a Reshape follows)
    as_list = indices.ndim == 1 and out.batch_axis == x.batch_axis
    gathered = out.name if as_list else new_tensor(graph, f"{out.name}_picked", picked_shape, x.batch_axis)
    runs = _runs(wrapped)
    if len(runs) <= MAX_GATHER_PIECES:
        layers, pieces = _crops(graph, node, x, out, axis, nc_axis, runs, gathered)
    elif _scattered_rows(graph, x, axis, wrapped):      # a product with a constant one-hot picks them all
        positions = graph.add_constant(f"{out.name}_positions", np.asarray(wrapped, np.int64).reshape(indices.shape))
        return one_hot_gather(graph, node, x, out, axis, indices=positions.name)
    else:
        layers, pieces = _strided(graph, node, x, nc_axis, wrapped, len(runs), gathered)
    if len(pieces) > 1:
        layers.append(layer(node, graph, "Concat", pieces, [gathered], {0: nc_axis}))
    if not as_list:     # the indices' own shape replaces the picked axis (a scalar drops it)
        layers.append(_index_shape(graph, node, graph.tensors[gathered], out, axis, indices.ndim))
    return layers


def _scattered_rows(graph: Graph, x: Tensor, axis: int, wrapped: list[int]) -> bool:
    """Too many runs, and not a few strided ones, of rows of float data computed at run time along its
    first axis that is not 1 (UperNet's adaptive pooling to 6 cells of a 3x3 map under torch.export)."""
    return (len(progressions(wrapped)) > MAX_GATHER_PIECES and len(wrapped) * x.shape[axis] <= MAX_ONE_HOT
            and not x.is_constant and x.dtype is not None
            and x.dtype.kind == "f" and x.shape is not None and None not in x.shape
            and all(d == 1 for d in x.shape[:axis]))


def _crops(graph: Graph, node: Node, x: Tensor, out: Tensor, axis: int, nc_axis: int,
           runs: list[tuple[int, int]], gathered: str) -> tuple[list[Node], list[str]]:
    """One Crop per run of consecutive indices (a single run writes `gathered`)."""
    layers, pieces = [], []
    for k, (start, end) in enumerate(runs):
        piece = gathered if len(runs) == 1 else new_tensor(
            graph, f"{out.name}_{k}", tuple(end - start if a == axis else d for a, d in enumerate(x.shape)),
            x.batch_axis)
        layers.append(layer(node, graph, "Crop", [x.name], [piece], {9: [start], 10: [end], 11: [nc_axis]},
                            suffix=f"_crop{k}"))
        pieces.append(piece)
    return layers, pieces


def _strided(graph: Graph, node: Node, x: Tensor, nc_axis: int, wrapped: list[int], run_count: int,
             gathered: str) -> tuple[list[Node], list[str]]:
    """One strided slice per progression of the indices (a single one writes `gathered`)."""
    pieces = progressions(wrapped)
    made = strided_pieces(graph, node, x, nc_axis, pieces) if len(pieces) <= MAX_GATHER_PIECES else None
    if made is None:
        raise fail(node, graph, f"{run_count} separate index ranges ({len(pieces)} strided ones); at most "
                                f"{MAX_GATHER_PIECES} are lowered")
    layers, names = made
    if len(names) == 1:
        layers[-1].outputs[-1] = gathered
    return layers, names


def _index_shape(graph: Graph, node: Node, picked: Tensor, out: Tensor, axis: int, index_rank: int) -> Node:
    """Reshape the picked tensor (one axis of all indices) to the output (the indices' axes there)."""
    pairs = {o: o for o in range(axis)}
    pairs.update({o: o - index_rank + 1 for o in range(axis + index_rank, out.rank)})
    return reshape_layer(graph, node, picked.name, out.name, ncnn_pairs(picked, out, pairs), suffix="_index_shape")


# ---- embeddings ------------------------------------------------------------------------
def _index_source(graph: Graph, node: Node, name: str) -> str:
    """The integer graph input the indices are, through layers that only move bits."""
    current = name
    while current not in graph.inputs:
        t, producer = graph.tensors[current], graph.producer(current)
        if t.dtype.kind not in "iu" or producer is None or producer.op not in ("Noop", "Reshape", "Split"):
            raise fail(node, graph, f"the indices '{name}' are computed at run time; ncnn's Embed reads int32 "
                                    "word indices, which only an integer graph input can give it")
        current = producer.inputs[0]
    if graph.tensors[current].dtype.kind not in "iu":
        raise fail(node, graph, f"the indices come from input '{current}' of type {graph.tensors[current].dtype}; "
                                "ncnn's Embed needs integer word indices")
    return current


def _embedding(graph: Graph, node: Node, table: Tensor, out: Tensor, axis: int) -> list[Node]:
    indices = graph.tensors[node.inputs[1]]
    if axis != 0:
        raise fail(node, graph, f"a constant table read at run-time indices along axis {axis}: only axis 0 "
                                "(rows, an embedding) maps to ncnn's Embed")
    rows, width = table.shape[0], int(np.prod(table.shape[1:], dtype=np.int64))
    # a run-time count of words is fine where the ids are a 1-D blob and the rows come out as they are
    one_blob = indices.shape is not None and len(indices.ncnn_shape) == 1 and out.shape is not None \
        and tuple(out.ncnn_shape) == (indices.ncnn_shape[0], width)
    if indices.shape is None or None in indices.shape and not one_blob:
        raise fail(node, graph, "the number of indices is unknown; give static input shapes with --input-shape")
    source = _index_source(graph, node, indices.name)
    _, as_numbers = readers(graph, source)
    if as_numbers:
        other = as_numbers[0]
        raise fail(node, graph, f"input '{source}' is read as int32 word indices here and as numbers by "
                                f"{other.op} node '{other.origin or other.name}'; ncnn takes it one way only")
    words = indices.ncnn_shape[0] if one_blob else int(np.prod(indices.shape, dtype=np.int64))
    layers, flat = [], indices.name
    if tuple(indices.ncnn_shape) != (words,):       # Embed reads a 1-D blob
        flat = new_tensor(graph, f"{indices.name}_words", (words,), None)
        graph.tensors[flat].dtype = indices.dtype
        layers.append(reshape_layer(graph, node, indices.name, flat, {}, suffix="_words"))
    rowwise = out.name
    if tuple(out.ncnn_shape) != (words, width):
        rowwise = new_tensor(graph, f"{out.name}_rows", (words, width), None)
    weight = np.asarray(table.value, np.float32).reshape(rows, width)
    layers.append(layer(node, graph, "Embed", [flat], [rowwise],
                        {0: width, 1: rows, 2: 0, 3: weight.size}, weights=[weight]))
    if rowwise != out.name:
        layers.append(reshape_layer(graph, node, rowwise, out.name, {}, suffix="_unflatten"))
    return layers

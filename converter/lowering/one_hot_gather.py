"""Gather from a constant table at indices computed at run time -> one-hot rows times the table.

ncnn's Embed reads int32 bits, which only an integer graph input can give it (gather.py);
computed indices (RoBERTa's position ids: cumsum of the padding mask) are float numbers in
ncnn, as is an id input that something else reads as numbers. For integers below 2**24
this is exact:

    i'     = i + P * relu(-sign(i))          negative indices wrap, as ONNX's do
    onehot = 1 - sign(|i' - [0, 1, ..., P-1]|)      one row of 0s and a single 1 per index
    rows   = InnerProduct(onehot, table)     each output sums one table value and zeros

A sum of one value and exact zeros is that value, so the rows are the table's rows bit for
bit (a table holding inf or NaN is refused: 0 * inf is NaN). Out-of-range indices, an error
in onnxruntime, give zero rows here.
"""
from __future__ import annotations

import numpy as np

from ..int_inputs import readers
from ..ir import Graph, Node, Tensor
from ..ncnn_layers import UNARY_OPS
from .common import fail, layer, new_tensor
from .logic import _pair, _scalar_op, _unary
from .tensor_ops import reshape_layer

BIT_MOVES = ("Noop", "Reshape", "Split")
MAX_ONE_HOT = 1 << 24       # elements of the one-hot matrix: beyond this the table is better fed as ids


def _integer_source(graph: Graph, name: str) -> str | None:
    """The integer graph input the indices are, through layers that only move bits; else None."""
    current = name
    while current not in graph.inputs:
        producer = graph.producer(current)
        if graph.tensors[current].dtype.kind not in "iu" or producer is None or producer.op not in BIT_MOVES:
            return None
        current = producer.inputs[0]
    return current if graph.tensors[current].dtype.kind in "iu" else None


def needs_one_hot(graph: Graph, name: str) -> bool:
    """Embed cannot read these indices: they are computed, or their input is also read as numbers
    (RoBERTa compares its ids with the padding id), so it is fed as float32 numbers."""
    source = _integer_source(graph, name)
    return source is None or bool(readers(graph, source)[1])


def one_hot_gather(graph: Graph, node: Node, table: Tensor, out: Tensor, axis: int) -> list[Node]:
    indices = graph.tensors[node.inputs[1]]
    if axis != 0:
        raise fail(node, graph, f"a constant table read at run-time indices along axis {axis}: only rows "
                                "(axis 0) are looked up")
    if indices.shape is None or None in indices.shape:
        raise fail(node, graph, "the number of indices is unknown; give static input shapes with --input-shape")
    if not np.all(np.isfinite(table.value)):
        raise fail(node, graph, f"the table '{table.name}' holds inf or NaN, which a one-hot product turns into NaN")
    rows, width = table.shape[0], int(np.prod(table.shape[1:], dtype=np.int64))
    count = int(np.prod(indices.shape, dtype=np.int64))
    if count * rows > MAX_ONE_HOT:
        raise fail(node, graph, f"{count} run-time indices into {rows} rows: the one-hot lookup would need "
                                f"{count * rows} elements (at most {MAX_ONE_HOT})")

    def column(stem: str) -> str:
        return new_tensor(graph, f"{out.name}_{stem}", (count, 1), None)

    flat = column("ids")
    layers = [reshape_layer(graph, node, indices.name, flat, {}, suffix="_ids")]
    sign_layer, s = _unary(graph, node, flat, "sign")
    shift_layer, shift = _scalar_op(graph, node, s, "mul", -float(rows))
    wrap, w = column("wrap"), column("wrapped")
    layers += [sign_layer, shift_layer, layer(node, graph, "ReLU", [shift], [wrap], suffix="_negative"),
               _pair(graph, node, flat, wrap, "add", w, tag="_wrap")[0]]
    grid = graph.add_constant(f"{out.name}_rows", np.arange(rows, dtype=np.float32).reshape(1, rows)).name
    matrix = (count, rows)
    diff, distance, hot = (new_tensor(graph, f"{out.name}_{t}", matrix, None) for t in ("diff", "distance", "hot"))
    layers.append(_pair(graph, node, w, grid, "sub", diff)[0])
    layers.append(_unary(graph, node, diff, "abs", distance)[0])
    differs = new_tensor(graph, f"{out.name}_differs", matrix, None)
    layers += [layer(node, graph, "UnaryOp", [distance], [differs], {0: UNARY_OPS["sign"]}, suffix="_differs"),
               _scalar_op(graph, node, differs, "rsub", 1.0, hot)[0]]
    picked = new_tensor(graph, f"{out.name}_picked", (count, width), None)
    weight = np.asarray(table.value, np.float32).reshape(rows, width)
    layers.append(layer(node, graph, "InnerProduct", [hot], [picked], {0: width, 1: 0, 2: rows * width},
                        weights=[weight.T]))
    # a Reshape even where shapes agree: ncnn's InnerProduct returns a single row as a 1-D blob
    target = out.ncnn_shape
    layers.append(reshape_layer(graph, node, picked, out.name, {}, target=target, suffix="_rows")
                  if tuple(target) != (count, width) or count != 1 else
                  layer(node, graph, "Reshape", [picked], [out.name], {0: width, 1: 1}, suffix="_rows"))
    return layers

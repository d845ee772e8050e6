"""Gather at indices computed at run time -> one-hot rows times the table.

ncnn's Embed reads int32 bits, which only an integer graph input can give it (gather.py);
computed indices (RoBERTa's position ids: cumsum of the padding mask; CLIP's pooling at the
argmax of the ids) are float numbers in ncnn, as is an id input that something else reads
as numbers. For integers below 2**24 this is exact:

    i'     = i + P * relu(-sign(i))          negative indices wrap, as ONNX's do
    onehot = 1 - sign(|i' - [0, 1, ..., P-1]|)      one row of 0s and a single 1 per index
    rows   = onehot @ table                  InnerProduct for a constant table, else MatMul

Each output sums one table value and exact zeros, so the rows are the table's rows bit for
bit, provided the table is finite (0 * inf is NaN: a constant table holding inf or NaN is
refused; a computed one is the model's own numbers). Out-of-range indices, an error in
onnxruntime, give zero rows here. The table is read along `axis` when every axis before it
has extent 1 (a (1, T, D) hidden state read at token positions).
"""
from __future__ import annotations

import math

import numpy as np

from converter.ncnn_side.layers import REDUCTION_OPS, UNARY_OPS
from converter.shapes.int_inputs import readers
from converter.shapes.symbolic import Ref

from ..ir import Graph, Node, Tensor
from . import LOWERINGS
from .common import fail, layer, new_tensor, reshape_layer
from .logic import _pair, _scalar_op, _unary
from .reshape import expressed_reshape
from .runtime_positions import runtime_positions

BIT_MOVES = ("Noop", "Reshape", "Split")
MAX_ONE_HOT = 1 << 24       # elements of the one-hot matrix: beyond this the lookup is refused
SLOW_ROWS = 4096            # a vocabulary this large is worth a warning (50k rows: ~13x an Embed, measured)


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


def _one_hot(graph: Graph, node: Node, indices: str, count: int | None, rows: int | None, stem: str,
             table: str = "", axis: int = 0) -> tuple[list[Node], str]:
    """The (count, rows) one-hot matrix of the indices (wrapped when negative); a run-time `rows`
    is the extent of `table`'s `axis`."""
    def column(tag: str) -> str:
        return new_tensor(graph, f"{stem}_{tag}", (count, 1), None)

    flat = column("ids")
    layers = [reshape_layer(graph, node, indices, flat, {}, suffix="_ids")]
    wrap, wrapped = column("wrap"), column("wrapped")
    if rows is None:        # a run-time table length: its positions and their count are computed too
        made, grid = runtime_positions(graph, node, table, axis, (1, None), None, f"{stem}_rows")
        length = new_tensor(graph, f"{stem}_length", (1, 1), None)
        layers += made + [layer(node, graph, "Reduction", [grid], [length],
                                {0: REDUCTION_OPS["max"], 1: 0, 3: [1], 4: 1, 5: 1}, suffix="_length")]
        count_layer, total = _scalar_op(graph, node, length, "add", 1.0)
        sign_layer, s = _unary(graph, node, flat, "sign")
        negative, shift = column("negative"), column("shift")
        layers += [count_layer, sign_layer, _scalar_op(graph, node, s, "mul", -1.0, negative)[0],
                   _pair(graph, node, negative, total, "mul", shift, tag="_shift")[0]]
    else:
        sign_layer, s = _unary(graph, node, flat, "sign")
        shift_layer, shift = _scalar_op(graph, node, s, "mul", -float(rows))
        layers += [sign_layer, shift_layer]
        grid = graph.add_constant(f"{stem}_rows", np.arange(rows, dtype=np.float32).reshape(1, rows)).name
    layers += [layer(node, graph, "ReLU", [shift], [wrap], suffix="_negative"),
               _pair(graph, node, flat, wrap, "add", wrapped, tag="_wrap")[0]]
    diff, distance, differs, hot = (new_tensor(graph, f"{stem}_{t}", (count, rows), None)
                                    for t in ("diff", "distance", "differs", "hot"))
    layers += [_pair(graph, node, wrapped, grid, "sub", diff)[0],
               _unary(graph, node, diff, "abs", distance)[0],
               layer(node, graph, "UnaryOp", [distance], [differs], {0: UNARY_OPS["sign"]}, suffix="_differs"),
               _scalar_op(graph, node, differs, "rsub", 1.0, hot)[0]]
    return layers, hot


def one_hot_gather(graph: Graph, node: Node, table: Tensor, out: Tensor, axis: int,
                   indices: str | None = None) -> list[Node]:
    """out = table gathered along `axis` at run-time `indices` (default: the node's input 1)."""
    index = graph.tensors[indices or node.inputs[1]]
    # a run-time extent is fine along the rows of a computed table (a hidden state of run-time length)
    if table.shape is None or any(d is None and (a != axis or table.is_constant) for a, d in enumerate(table.shape)):
        raise fail(node, graph, f"'{table.name}' has unknown extents; give static input shapes with --input-shape")
    if any(d != 1 for d in table.shape[:axis]):
        raise fail(node, graph, f"run-time indices along axis {axis} of {list(table.shape)}: only the first axis "
                                "that is not 1 can be read at run-time positions")
    # a run-time count of indices (a sequence length) is one inferred extent of the one-hot rows
    unknown = index.shape is not None and None in index.shape
    # several (T5's (S, S) relative-position buckets): the rows are put back in shape with an expression
    several = unknown and sum(d is None for d in index.ncnn_shape) > 1
    if index.shape is None or unknown and not several and (
            sum(d is None for d in index.ncnn_shape) != 1 or out.shape is None
            or sum(d is None for d in out.ncnn_shape) != 1):
        raise fail(node, graph, "the number of indices is unknown; give static input shapes with --input-shape")
    if table.is_constant and not np.all(np.isfinite(table.value)):
        raise fail(node, graph, f"the table '{table.name}' holds inf or NaN, which a one-hot product turns into NaN")
    rows, width = table.shape[axis], math.prod(table.shape[axis + 1:])
    count = None if unknown else math.prod(index.shape)
    if count is not None and rows is not None and count * rows > MAX_ONE_HOT:
        raise fail(node, graph, f"{count} run-time indices into {rows} rows: the one-hot lookup would need "
                                f"{count * rows} elements (at most {MAX_ONE_HOT})")
    if rows is not None and rows >= SLOW_ROWS and getattr(graph, "warnings", None) is not None:
        graph.warnings.append(f"{node.describe()}: run-time indices into {rows} rows become a one-hot product "
                              f"({rows * width} multiply-adds per index), exact but much slower than an Embed")
    if index.is_constant:       # positions known when converting (too scattered for Crops): a constant one-hot
        wrapped = np.where(index.value < 0, index.value + rows, index.value).reshape(-1)
        layers, hot = [], graph.add_constant(f"{out.name}_one_hot",
                                             (wrapped[:, None] == np.arange(rows)[None, :]).astype(np.float32)).name
    else:
        layers, hot = _one_hot(graph, node, index.name, count, rows, out.name, table.name, axis)
    picked = new_tensor(graph, f"{out.name}_picked", (count, width), None)
    if table.is_constant:
        weight = np.asarray(table.value, np.float32).reshape(rows, width)
        layers.append(layer(node, graph, "InnerProduct", [hot], [picked], {0: width, 1: 0, 2: rows * width},
                            weights=[weight.T]))
    else:
        flat = new_tensor(graph, f"{table.name}_table", (rows, width), None)
        layers.append(reshape_layer(graph, node, table.name, flat, {}, suffix="_table"))
        layers += LOWERINGS["MatMul"](graph, Node(f"{node.name}_lookup", "MatMul", [hot, flat], [picked],
                                     origin=node.origin or node.name))
    if several:
        terms = [*table.shape[:axis], *(Ref(index.name, i) if d is None else d for i, d in enumerate(index.shape)),
                 *table.shape[axis + 1:]]
        return layers + [expressed_reshape(graph, node, terms, picked, out.name)]
    # a Reshape even where shapes agree: ncnn's InnerProduct returns a single row as a 1-D blob
    target = out.ncnn_shape
    layers.append(reshape_layer(graph, node, picked, out.name, {}, target=target, suffix="_rows")
                  if tuple(target) != (count, width) or count != 1 else
                  layer(node, graph, "Reshape", [picked], [out.name], {0: width, 1: 1}, suffix="_rows"))
    return layers


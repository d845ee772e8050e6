"""Attention matched where the sequence lengths are run-time sizes (used by fuse_attention).

fuse_attention checks head layouts by running the layout ops on arrays of element indexes, which
needs numbers for every extent. With a dynamic sequence length the extents are terms over the
inputs' sizes (converter/shapes/symbolic_shapes.py): the match runs twice on views of the graph where
every symbol takes a size, two different sets of sizes (distinct primes, unlike any static
extent), and the fusion is kept only when both runs match the same nodes into the same layer:
a layout that read other columns at another length would differ in one of them. ncnn's
MultiHeadAttention takes any number of rows; its mask must have one row per query and one column
per key (T, S), or (H, T, S): a (T, S) mask reaches it through Squeeze/Unsqueeze (ranks only), a
padding mask of one row (1, S) is added to zeros (T, S) filled at run time (a 4-D blob, or one row
that ncnn would have to broadcast, gives other numbers); a row that reshapes and Expands copy to
every head (torch's nn.MultiheadAttention) is filled once for all heads, from before the copies.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.symbolic import REFS, SHAPE_TERMS, Ref, refs
from converter.shapes.symbolic_shapes import SymbolicShapes
from converter.shapes.term_arithmetic import evaluate
from converter.rewrite.patterns import scaled_matmul


class NoMatch(Exception):
    pass


def need(ok: bool) -> None:
    if not ok:
        raise NoMatch


PROBES = ((101, 103, 107, 109, 113, 127, 131, 137), (211, 223, 227, 229, 233, 239, 241, 251))


class _Tensors:
    """graph.tensors as a probe sees them: symbolic extents evaluated at its sizes."""

    def __init__(self, view: "ProbedGraph"):
        self.view = view

    def __getitem__(self, name: str) -> Tensor:
        t = self.view.graph.tensors[name]
        dims = self.view.shapes.dims.get(name)
        if t.shape is None or dims is None or len(dims) != len(t.shape) or None not in t.shape:
            return t
        sized = tuple(evaluate(d, self.view.sizes) for d in dims)
        return replace(t, shape=tuple(s if s is not None else d for s, d in zip(sized, t.shape)))

    def get(self, name: str, default=None):
        return self[name] if name in self.view.graph.tensors else default

    def __contains__(self, name: str) -> bool:
        return name in self.view.graph.tensors


class ProbedGraph:
    """The graph, read through a probe; everything but `tensors` is the graph's own."""

    def __init__(self, graph: Graph, shapes: SymbolicShapes, sizes: dict[Ref, int]):
        self.graph, self.shapes, self.sizes = graph, shapes, sizes
        self.tensors = _Tensors(self)

    def __getattr__(self, name: str):
        return getattr(self.graph, name)


def symbolic_shapes(graph: Graph) -> SymbolicShapes | None:
    """Every tensor's terms (one walk), or None for a graph whose extents are all known."""
    if not any(t.shape is not None and None in t.shape for t in graph.tensors.values()):
        return None
    shapes = SymbolicShapes(graph)
    for node in graph.topological():
        if not node.ncnn:
            shapes.visit(node)
    return shapes


def _symbols(shapes: SymbolicShapes) -> list[Ref]:
    found = {r for dims in shapes.dims.values() if dims for d in dims if d is not None for r in refs(d)}
    return sorted(found, key=repr)


def _same(a: Node, b: Node) -> bool:
    return a.params == b.params and len(a.weights) == len(b.weights) and all(
        x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a.weights, b.weights))


def probed_match(graph: Graph, shapes: SymbolicShapes, softmax: Node, match: Callable, scores: Callable,
                 masks: dict) -> tuple[Node, list[Node], list[Node]]:
    """fuse_attention's `match` at two sets of sizes; the fused layer when both agree, its mask made
    from the run-time mask by rank changes. Raises what `match` raises when they do not."""
    symbols = _symbols(shapes)
    if len(symbols) > len(PROBES[0]):
        raise LookupError("too many run-time sizes to probe")
    runs = []
    for probe in PROBES:
        view = ProbedGraph(graph, shapes, dict(zip(symbols, probe)))
        fused, nodes, _ = match(view, softmax, {})
        mask = scores(view, softmax)[3]
        full = None if mask is None else (1,) * (4 - view.tensors[mask].rank) + view.tensors[mask].shape
        runs.append((fused, {n.name for n in nodes}, mask, full, view))
    (fused, names, mask, full, view), (other, other_names, _, other_full, _) = runs
    if not _same(fused, other) or names != other_names:
        raise LookupError("the layer differs between sizes")
    nodes = [graph.nodes[n] for n in names]
    if mask is None:
        return fused, nodes, []
    heads = fused.params[1]
    one_row = []
    for f, v in ((full, view), (other_full, runs[1][4])):
        t, s = (v.tensors[x].ncnn_shape[0] for x in fused.inputs[:2]) if len(fused.inputs) > 2 else \
            (v.tensors[fused.inputs[0]].ncnn_shape[0],) * 2
        if graph.tensors[mask].dtype != np.float32 or f[0] != 1 or f[1] not in (1, heads) or f[2:] not in (
                (t, s), (1, s)):
            raise LookupError("the mask is broadcast along its columns")
        one_row.append(f[2] == 1)
    if one_row[0] != one_row[1]:
        raise LookupError("the mask has one row at one size only")
    rows, shared = None, full[1] == 1
    if one_row[0]:      # a padding mask (1, 1|H, 1, S): one row for every query, made at run time
        rows = shapes.dims.get(softmax.inputs[0], (None,) * 4)[2:]
        if None in rows or not all(r.tensor in graph.inputs for d in rows for r in refs(d)):
            raise LookupError("the number of queries is no term over the inputs' extents")
        source = None if shared else _one_row_source(graph, [view, runs[1][4]], mask)
        if source is not None:
            mask, shared = source, True
    key = (mask, heads, rows)       # a padding mask filled to T rows serves only queries of T rows
    made = []
    if key not in masks:
        masks[key], made = _mask_blob(graph, mask, None if shared else heads, rows)
    fused.inputs[-1] = masks[key]
    return fused, nodes, made


RESHAPING = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Expand"}


def _one_row_source(graph: Graph, views: list[ProbedGraph], mask: str) -> str | None:
    """The tensor of one row, (1, S) or (1, 1, 1, S), that a per-head padding mask (1, H, 1, S) copies to
    every head through reshapes and Expands (torch's nn.MultiheadAttention), the furthest back there is:
    its index array, run through the nodes in between at each probe size, gives each head that row."""
    chain, name = [], mask
    while len(chain) < 16:
        node = graph.producer(name)
        if node is None or node.ncnn or node.op not in RESHAPING or len(node.outputs) != 1:
            break
        chain.append(node)
        name = node.inputs[0]
    for k in range(len(chain), 0, -1):
        source = chain[k - 1].inputs[0]
        if graph.tensors[source].dtype == np.float32 and all(
                _copies_row(v, chain[:k][::-1], source) for v in views):
            return source
    return None


def _copies_row(view: ProbedGraph, nodes: list[Node], source: str) -> bool:
    shape = view.tensors[source].shape
    if shape is None or None in shape or tuple(shape) not in ((1, shape[-1]), (1, 1, 1, shape[-1])):
        return False
    arr = np.arange(shape[-1]).reshape(shape)
    for node in nodes:
        out = view.tensors[node.outputs[0]].shape
        if out is None or None in out:
            return False
        try:
            arr = np.broadcast_to(arr, out) if node.op == "Expand" else arr.reshape(out)
        except ValueError:
            return False
    arr = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
    return arr.shape[2] == 1 and np.array_equal(arr, np.broadcast_to(np.arange(shape[-1]), arr.shape))


def _mask_blob(graph: Graph, mask: str, heads: int | None, rows: tuple | None) -> tuple[str, list[Node]]:
    """The mask as (1, T, S) (one for all heads: `heads` None) or (1, H, T, S), batch axis first, by rank changes;
    a mask of one row, with `rows` the terms (T, S), plus zeros of that shape filled at run time
    (mask + 0 is the mask, -inf included)."""
    m = graph.tensors[mask]
    want = 3 if heads is None else 4
    made, name = [], mask
    if m.rank != want:
        squeeze = m.rank > want
        axes = graph.add_constant(f"{mask}_heads_axis", np.array([1 if squeeze else 0], np.int64)).name
        shape = m.shape[:1] + m.shape[2:] if squeeze else (1, *m.shape)
        name = _tensor(graph, f"{mask}_rows", shape)
        made.append(Node(graph.fresh_name(f"{mask}_rows"), "Squeeze" if squeeze else "Unsqueeze", [mask, axes],
                         [name]))
    if rows is None:
        return name, made
    terms = [1, *([] if heads is None else [heads]), *rows]
    zeros = _tensor(graph, f"{mask}_zeros", tuple(t if isinstance(t, int) else None for t in terms))
    read = sorted({r.tensor for t in terms for r in refs(t)})       # pinned as pin_refs does (added later)
    fill = Node(graph.fresh_name(f"{mask}_zeros"), "ConstantOfShape", read, [zeros],
                meta={SHAPE_TERMS: terms, FILL_VALUE: 0.0, REFS: read})
    full = _tensor(graph, f"{mask}_every_row", graph.tensors[zeros].shape)
    return full, [*made, fill, Node(graph.fresh_name(f"{mask}_every_row"), "Add", [name, zeros], [full])]


def _tensor(graph: Graph, stem: str, shape: tuple) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), shape, np.dtype(np.float32), batch_axis=0)).name


def match_at_any_size(graph: Graph, shapes: SymbolicShapes | None, softmax: Node, match: Callable,
                      scores: Callable, masks: dict) -> tuple[Node, list[Node], list[Node]]:
    """`match` on the graph as it is; where that fails and sizes are run-time terms, probed_match."""
    try:
        return match(graph, softmax, masks)
    except NoMatch:
        if shapes is None:
            raise
    try:
        return probed_match(graph, shapes, softmax, match, scores, masks)
    except LookupError:
        raise NoMatch from None


def attention_scores(graph: Graph, softmax: Node):
    """(MatMul q.k, nodes, scale on the scores, mask tensor or None) for a Softmax's input: the
    scaled product, plus a mask added after the scaling."""
    found = scaled_matmul(graph, softmax.inputs[0])
    if found is not None:
        return (*found, None)
    add = graph.producer(softmax.inputs[0])
    need(add is not None and add.op == "Add" and not add.ncnn and len(add.inputs) == 2)
    for s, m in (add.inputs, add.inputs[::-1]):
        found = scaled_matmul(graph, s)
        if found is not None and s != m:
            mm, nodes, scale = found
            return mm, [add] + nodes, scale, m
    raise NoMatch


def scores_and_addends(graph: Graph, softmax: Node, shapes: SymbolicShapes | None = None):
    """(MatMul q.k, nodes, scale on the scores, [addends]) for a Softmax's input: the scaled product
    plus float tensors added after the scaling, one Add after another in either operand order (T5
    adds its position bias, then the padding mask), through Reshapes that only add or drop leading
    ones (BART-style heads as a (H, T, S) batch, made (1, H, T, S) around the mask). Raises NoMatch."""
    name, nodes, addends = softmax.inputs[0], [], []
    while len(nodes) < 12:
        found = scaled_matmul(graph, name)
        if found is not None:
            mm, scaling, scale = found
            return mm, nodes + scaling, scale, addends[::-1]
        node = graph.producer(name)
        need(node is not None and not node.ncnn)
        nodes.append(node)
        if node.op == "Reshape" and unit_reshape(graph, node, shapes):
            name = node.inputs[0]
            continue
        need(node.op == "Add" and len(node.inputs) == 2 and node.inputs[0] != node.inputs[1])
        a, b = node.inputs
        inner = [x for x in (a, b) if scaled_matmul(graph, x) is not None] or \
            [x for x in (a, b) if graph.producer(x) is not None and graph.producer(x).op in ("Add", "Reshape")]
        need(len(inner) >= 1)
        name = inner[0]
        addends.append(b if name == a else a)
    raise NoMatch


def unit_reshape(graph: Graph, node: Node, shapes: SymbolicShapes | None = None) -> bool:
    """A Reshape that only adds or drops leading ones: the same extents after them (the same terms,
    or numbers with one of them unknown on both sides, then equal: the element count is the same)."""
    terms = [shapes.dims.get(n) if shapes is not None else None for n in (node.inputs[0], node.outputs[0])]
    if None not in terms and _strip_ones(terms[0]) == _strip_ones(terms[1]):
        return True
    a, b = (graph.tensors[n].shape for n in (node.inputs[0], node.outputs[0]))
    if a is None or b is None:
        return False
    a, b = _strip_ones(a), _strip_ones(b)
    return len(a) == len(b) and sum(x is None for x in a) <= 1 and all(
        (x is None and y is None) or x == y for x, y in zip(a, b))


def _strip_ones(shape: tuple) -> tuple:
    k = 0
    while k < len(shape) - 1 and shape[k] == 1:
        k += 1
    return tuple(shape[k:])


def passes_float_on(graph: Graph, node: Node) -> bool:
    """A node that passes its float32 input on unchanged (torch writes a float->float Cast after
    HF's softmax)."""
    if node.op in ("Identity", "Dropout") and len(node.outputs) == 1 or node.op == "Cast":
        source, result = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
        return source.dtype == result.dtype == np.float32 and source.shape == result.shape
    return False

"""Positions offset by a run-time cache length: a decoder step's position rows and its causal mask.

A decoder step fed its past key/values (optimum's decoder_with_past, a merged decoder's cache
branch) numbers its tokens past, past + 1, ..., past + T - 1, past being an extent of a past key
read at run time (Shape -> Gather, or torch.export's Shape(start, end) -> Squeeze). From those:
- learned or sinusoidal position rows are gathered from a constant table (Whisper, TrOCR, BART,
  Marian): Gather(table, positions), or GatherND(table, positions[..., None]) from torch.export,
  often behind a Tile by (batch, 1) that repeats nothing at batch 1;
- the causal mask compares key positions 0 .. K - 1 with each query's position:
  LessOrEqual(keys, queries), then Where(mask, 0, -inf) added to the scores.
resolve_symbolic_extents follows index ranges with constant offsets; here an offset may be a term
(the past length), and:
- a Tile whose repeats are all 1 (as terms) is its input;
- a Gather (or a GatherND on a last index axis of 1) of rows offset .. offset + n - 1 of a constant
  table becomes a Slice of the table to those run-time bounds (ncnn's Crop with expressions);
- a GatherND of the mask at [0, offset + arange(n)] (torch.export's mask[batch_idx, kv_idx]; Gemma3's
  sliding layer numbers its keys from max(0, P - window + 1), a size express_shapes wrote as a value)
  becomes a Slice of the mask's columns to those run-time bounds;
- a comparison of two ranges that holds (or fails) for every pair of elements at every length
  (one query at position past over keys 0 .. past: the whole row visible) becomes a constant of
  ones along those axes, which broadcasts where its readers already span the shape (else left).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from converter.ir import Graph, Node, Tensor
from converter.rewrite.fold import fold_node
from converter.shapes.index_ranges import IndexRanges, broadcast_safe, canonical_terms, fill_numbers
from converter.shapes.runtime_fill import SIZE_TERM
from converter.shapes.runtime_size_values import express_range_values
from converter.shapes.shape_math import ShapeMath, remove_dead_shape_math
from converter.shapes.symbolic import SLICE_TERMS, Op, Term, op, pin_refs
from converter.shapes.symbolic_shapes import SymbolicShapes
from converter.rewrite.patterns import unsqueezed_last

from .infer_shapes import infer_shapes

COMPARE = {"LessOrEqual": lambda lo, hi: (lo, hi, 0), "Less": lambda lo, hi: (lo, hi, 1),
           "GreaterOrEqual": lambda lo, hi: (hi, lo, 0), "Greater": lambda lo, hi: (hi, lo, 1)}


class CacheRanges(IndexRanges):
    """IndexRanges whose offsets may be terms: a range plus a run-time size (a shape-math scalar)."""

    def __init__(self, graph: Graph, shapes: SymbolicShapes, math: ShapeMath):
        super().__init__(graph, shapes)
        self.math = math
        self.entries: list[Node] = []       # where a run-time size joined a range: Add(range, size)

    def _size(self, name: str) -> Term | None:
        terms, producer = self.math.terms.get(name), self.graph.producer(name)
        if terms is None and producer is not None and SIZE_TERM in producer.meta:    # express_shapes wrote it as a value
            terms = [producer.meta[SIZE_TERM]]
        return self.shapes.canon(terms[0]) if terms is not None and len(terms) == 1 else None

    def _rule(self, node: Node) -> tuple[Term, Term] | None:
        if node.op in ("Add", "Sub") and len(node.inputs) == 2:
            a, b = node.inputs
            for x, c in ((a, b), (b, a)) if node.op == "Add" else ((a, b),):
                if x not in self.ranges or c in self.ranges and self.ranges[c][0] != 1:
                    continue
                n, offset = self.ranges[x]
                shift = self._scalar(c)
                shift = self._size(c) if shift is None else shift
                if shift is None and c in self.ranges:
                    shift = self.ranges[c][1]               # one value everywhere (a term too)
                if shift is not None and not (isinstance(offset, int) and isinstance(shift, int)):
                    if isinstance(offset, int):
                        self.entries.append(node)
                    return n, op("+" if node.op == "Add" else "-", offset, shift)
        if node.op in ("Tile", "Expand") and node.inputs[0] in self.ranges and _unit_repeats(self.math, node):
            return self.ranges[node.inputs[0]]
        if node.op == "Range":
            found = _size_range(self, node)
            if found is not None and not isinstance(found[1], int):
                self.entries.append(node)
            return found
        return super()._rule(node)


def _size_range(ranges: CacheRanges, node: Node) -> tuple[Term, Term] | None:
    """Range(start, limit, 1) over run-time sizes (TrOCR's positions past .. past + T): (n, start)."""
    start, limit = ranges._size(node.inputs[0]), ranges._size(node.inputs[1])
    if start is None or limit is None or ranges._scalar(node.inputs[2]) != 1:
        return None
    return ranges.shapes.canon(op("-", limit, start)), start


def _unit_repeats(math: ShapeMath, node: Node) -> bool:
    """A Tile's repeats, or an Expand's shape (TrOCR's positions.expand(batch, -1)), all ones."""
    terms = math.of(node.inputs[1]) if len(node.inputs) > 1 else None
    return terms is not None and all(t == 1 for t in terms)


def _term_offset(ranges: CacheRanges, name: str) -> bool:
    """A range whose offset or length is a run-time size (resolve_symbolic_extents takes the Gathers
    at constant offsets; GatherNDs and term offsets come here)."""
    found = ranges.ranges.get(name)
    return found is not None and not (isinstance(found[0], int) and isinstance(found[1], int))


def _gather_rows(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: CacheRanges) -> bool:
    """Rows of a constant table at positions offset by a run-time size: a Slice to run-time bounds."""
    if node.op == "GatherND":
        indices = graph.tensors[node.inputs[1]]
        producer = graph.producer(indices.name)
        if node.attrs.get("batch_dims", 0) or indices.shape is None or indices.shape[-1] != 1 \
                or producer is None or producer.op != "Unsqueeze" or not _term_offset(ranges, producer.inputs[0]):
            return False
        # GatherND on a last index axis of 1 is Gather along axis 0 at the indices without that axis
        node.op, node.attrs = "Gather", {"axis": 0}
        graph.replace_input(node, 1, producer.inputs[0])
    return _term_offset(ranges, node.inputs[1]) and _slice_rows(graph, node, shapes, ranges)


def _slice_rows(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: CacheRanges) -> bool:
    """Gather(table, offset + arange(n)) along axis 0 -> Slice(table, offset, offset + n), given the
    indices' unit axes back."""
    table, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    n, offset = ranges.ranges[indices]
    dims = shapes.dims.get(indices)
    t = graph.tensors[table]
    if graph.value(table) is None or not t.rank or dims is None or int(node.attrs.get("axis", 0)) % t.rank != 0:
        return False
    along = next((i for i, d in enumerate(dims) if d == n and d != 1), len(dims) - 1)
    rows = graph.add_tensor(Tensor(graph.fresh_name(f"{out}_rows"), (n if isinstance(n, int) else None, *t.shape[1:]),
                                   t.dtype))
    cut = Node(graph.fresh_name(f"{node.name}_rows"), "Slice", [table], [rows.name], origin=node.origin or node.name,
               meta={SLICE_TERMS: {"starts": [offset], "ends": [op("+", offset, n)], "axes": [0]}})
    graph.add_node(cut)
    pin_refs(graph, cut, [offset, n])
    unit = [i for i in range(len(dims)) if i != along]
    graph.remove_node(node)
    if unit:
        axes = graph.add_constant(f"{out}_unit_axes", np.array(unit, np.int64))
        graph.add_node(Node(graph.fresh_name(f"{node.name}_unsqueeze"), "Unsqueeze", [rows.name, axes.name], [out],
                            origin=node.origin or node.name))
    else:
        graph.replace_all_uses(out, rows.name)
    return True


def _mask_columns(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: CacheRanges) -> bool:
    """GatherND(mask (1, L), [0, offset + arange(n)] stacked on a last axis), torch.export's
    mask[batch_idx, kv_idx] over a sliding window's keys (Gemma3: kv_idx offset by max(0, P - window
    + 1), P the sliding layer's own past): columns offset .. offset + n - 1 of the mask, a Slice to
    run-time bounds (Crop with expressions) reshaped as the gather gives them."""
    data, out = node.inputs[0], node.outputs[0]
    concat, t, out_dims = graph.producer(node.inputs[1]), graph.tensors[node.inputs[0]], shapes.dims.get(out)
    if node.attrs.get("batch_dims", 0) or concat is None or concat.op != "Concat" or len(concat.inputs) != 2 \
            or t.rank != 2 or out_dims is None or out in graph.outputs or shapes.of(data) is None \
            or shapes.of(data)[0] != 1 or concat.attrs.get("axis") not in (-1, graph.tensors[concat.outputs[0]].rank - 1):
        return False
    row, columns = (unsqueezed_last(graph, part) for part in concat.inputs)
    known = [d if isinstance(d, int) else -1 for d in out_dims]
    if ranges.ranges.get(row) != (1, 0) or not _term_offset(ranges, columns) or known.count(-1) > 1:
        return False
    n, offset = ranges.ranges[columns]
    cut = graph.add_tensor(Tensor(graph.fresh_name(f"{out}_columns"), (1, n if isinstance(n, int) else None), t.dtype))
    crop = Node(graph.fresh_name(f"{node.name}_columns"), "Slice", [data], [cut.name], origin=node.origin or node.name,
                meta={SLICE_TERMS: {"starts": [offset], "ends": [op("+", offset, n)], "axes": [1]}})
    graph.add_node(crop)
    pin_refs(graph, crop, [offset, n])
    target = graph.add_constant(f"{out}_shape", np.array(known, np.int64))
    graph.remove_node(node)
    graph.add_node(Node(graph.fresh_name(f"{node.name}_reshape"), "Reshape", [cut.name, target.name], [out],
                        attrs={"allowzero": 0}, origin=node.origin or node.name))
    return True


def _span(ranges: CacheRanges, shapes: SymbolicShapes, name: str) -> tuple[Term, Term] | None:
    """(first, last) values of a range tensor."""
    found = ranges.ranges.get(name)
    if found is None:
        return None
    n, offset = found
    return shapes.canon(offset), shapes.canon(op("+", offset, op("-", n, 1)))


def _difference(a: Term, b: Term) -> int | None:
    """a - b where it is a number whatever the sizes."""
    d = op("-", a, b)
    if isinstance(d, int):
        return d
    if isinstance(a, Op) and a.name == "+" and isinstance(a.b, int):        # (x + k) - y
        d = _difference(a.a, b)
        return None if d is None else d + a.b
    if isinstance(b, Op) and b.name == "+" and isinstance(b.b, int):        # x - (y + k)
        d = _difference(a, b.a)
        return None if d is None else d - b.b
    return 0 if a == b else None


def _constant_compare(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: CacheRanges) -> bool:
    """lo <= hi (or lo < hi) for every pair of elements: true everywhere when the largest lo is at most
    (below) the smallest hi; false everywhere when the smallest lo is above (at least) the largest hi."""
    out = node.outputs[0]
    spans = [_span(ranges, shapes, i) for i in node.inputs]
    if None in spans or out in graph.outputs or graph.tensors[out].rank is None:
        return False
    lo, hi, strict = COMPARE[node.op](*spans)
    always = _difference(hi[0], lo[1])        # smallest hi - largest lo
    never = _difference(lo[0], hi[1])         # smallest lo - largest hi
    if always is not None and always >= strict:
        value = True
    elif never is not None and never >= 1 - strict:
        value = False
    else:
        return False
    if not _settle(graph, out, value, shapes, apply=False):
        return False
    _make_constant(graph, node, value)
    _settle(graph, out, value, shapes, apply=True)
    return True


def _make_constant(graph: Graph, node: Node, value) -> None:
    """The node's one output holds `value` everywhere: a constant of ones along its axes."""
    t = graph.tensors[node.outputs[0]]
    t.value = np.full((1,) * t.rank, value, dtype=np.bool_ if isinstance(value, bool) else t.dtype)
    t.shape, t.batch_axis, t.dtype = t.value.shape, None, t.value.dtype
    graph.remove_node(node)


def _settle(graph: Graph, name: str, value: bool, shapes: SymbolicShapes, apply: bool) -> bool:
    """Whether every reader of a mask that is `value` everywhere takes it as a constant of ones along
    its axes (apply: make it so): a Cast to bool keeps it; And with True and Or with False are the other
    operand (where that spans the result), the other way round they are constant; a Where choosing
    between constants is one, if its readers broadcast it back (scores + mask)."""
    for reader in graph.consumers(name):
        out = reader.outputs[0] if len(reader.outputs) == 1 else None
        if out is None or out in graph.outputs or reader.inputs.count(name) != 1:
            return False
        if reader.op == "Cast" and reader.attrs.get("to") == TensorProto.BOOL:
            if apply:
                _make_constant(graph, reader, value)
            if not _settle(graph, out, value, shapes, apply):
                return False
        elif reader.op in ("And", "Or") and len(reader.inputs) == 2:
            other = reader.inputs[1] if reader.inputs[0] == name else reader.inputs[0]
            known = graph.value(other)
            if known is not None:                           # constant and constant: one value, or give up
                result = np.logical_and(value, known) if reader.op == "And" else np.logical_or(value, known)
                if not result.size or np.any(result != result.reshape(-1)[0]):
                    return False
                if apply:
                    _make_constant(graph, reader, bool(result.reshape(-1)[0]))
                if not _settle(graph, out, bool(result.reshape(-1)[0]), shapes, apply):
                    return False
            elif value == (reader.op == "And"):            # the other operand decides
                if shapes.of(other) != shapes.dims.get(out):
                    return False
                if apply:
                    graph.replace_all_uses(out, other)
                    graph.remove_node(reader)
            else:
                if apply:
                    _make_constant(graph, reader, value)
                if not _settle(graph, out, value, shapes, apply):
                    return False
        elif reader.op == "Where" and reader.inputs[0] == name \
                and all(graph.value(i) is not None for i in reader.inputs[1:]):
            if not broadcast_safe(graph, out, shapes):
                return False
            if apply and fold_node(graph, reader):      # Where(constant, constant, constant): a constant
                _drop_zero_adds(graph, out, shapes)
        else:
            return False
    return True


def _drop_zero_adds(graph: Graph, name: str, shapes: SymbolicShapes) -> None:
    """scores + 0 (a mask that hides nothing) is the scores, which span the sum's shape (checked by
    broadcast_safe before the fold): the attention is then a plain softmax(q k^T) v again."""
    value = graph.value(name)
    if value is None or np.any(value != 0):
        return
    for reader in graph.consumers(name):
        if reader.op == "Add" and reader.outputs[0] not in graph.outputs:
            other = reader.inputs[1] if reader.inputs[0] == name else reader.inputs[0]
            graph.replace_all_uses(reader.outputs[0], other)
            graph.remove_node(reader)


def resolve_cache_positions(graph: Graph) -> dict:
    math = ShapeMath(graph)
    shapes = SymbolicShapes(graph, lambda name: math.terms.get(name))
    ranges = CacheRanges(graph, shapes, math)
    rows = masks = tiles = values = renamed = 0
    compares = []
    for node in graph.topological():
        if node.ncnn or node.name not in graph.nodes:
            continue
        math.visit(node)
        if node.op != "Resize":      # a Resize keeps its relation over window formulas (resolve_symbolic_extents)
            renamed += canonical_terms(graph, node, shapes, shapes)    # expressions reading a Range's extent
        shapes.visit(node)
        if node.op == "Range" and _size_range(ranges, node) is not None:
            shapes.dims[node.outputs[0]] = (_size_range(ranges, node)[0],)
        ranges.visit(node)
        if node.op == "Tile" and _unit_repeats(math, node) and node.outputs[0] not in graph.outputs:
            shapes.dims[node.outputs[0]] = shapes.of(node.inputs[0])
            graph.replace_all_uses(node.outputs[0], node.inputs[0])
            graph.remove_node(node)
            tiles += 1
        elif node.op in ("Gather", "GatherND") and _gather_rows(graph, node, shapes, ranges):
            rows += 1
        elif node.op == "GatherND" and _mask_columns(graph, node, shapes, ranges):
            rows += 1
        elif node.op in COMPARE and len(node.inputs) == 2:
            compares.append(node)
    for node in compares:           # after the walk: the readers' shapes are known then
        masks += _constant_compare(graph, node, shapes, ranges)
    # a range at a run-time offset still read as values (T5's relative positions): computed from fills
    for node in ranges.entries:
        out = node.outputs[0]
        if node.name in graph.nodes and graph.use_count(out) and out in ranges.ranges and out not in math.terms:
            n, offset = ranges.ranges[out]
            values += express_range_values(graph, node, shapes.canon(n), shapes.canon(offset))
    filled = fill_numbers(graph, shapes)       # a Range of past .. past + 1 is one long
    if rows or masks or tiles or values or renamed or filled:
        remove_dead_shape_math(graph, set(math.terms))
        graph.remove_unused_tensors()
        infer_shapes(graph)
    return {"cache_position_rows": rows, "cache_masks_resolved": masks, "unit_tiles_removed": tiles,
            "cache_ranges_computed": values}

"""Extents that are run-time sizes, followed through the graph as terms (converter/shapes/symbolic_shapes.py):
fill the ones that are numbers, drop the broadcasts and gathers that change nothing.

A model exported with a dynamic sequence length computes its sizes at run time. After
express_shapes, onnx's inference still loses track of them: Expand(token_type_ids, [B, S]) of a
(1, S) tensor comes out (?, ?), so the batch axis is lost downstream, and Hugging Face's mask
(transformers' masking_utils) gathers the flattened mask at batch * S + arange(S), a (1, 1, 1, S, 1)
tensor ncnn cannot hold. One walk gives every tensor its terms and tracks index ranges (a tensor
holding offset + k along its one axis longer than 1, as the rewritten Range builds it); then:
- an Expand or Reshape whose output terms equal its input's is its input;
- x * ones(terms) (express_shapes' Expand to a run-time shape) that only repeats axes of known extent
  and keeps x's run-time ones is an Expand to a constant shape (Llama's repeat_kv over (1, G, 1, S, D));
- a Gather along an axis of extent n at indices 0..n-1 read only by Reshapes that copy no extent
  is its data, which those Reshapes read instead; a GatherND at such indices is a Reshape;
- an unknown extent whose term is a number is filled in (the batch's 1), and shapes are inferred
  again from there;
- a Pad by run-time amounts, each bounded over the probed sizes of the one extent it reads, pads by
  the bounds and crops to run-time bounds (converter/shapes/runtime_pad.py);
- expressions (Reshape, fill, Slice sizes) name the inputs' extents, not the tensors they were
  written against.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.op_groups import BROADCASTING
from converter.rewrite.fold import fold_node
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.runtime_pad import bounded_pad
from converter.shapes.shape_math import ShapeMath, remove_dead_shape_math
from converter.shapes.symbolic import RESIZE_RELATION, SHAPE_TERMS, SLICE_TERMS, Term, op, pin_refs, pinned_inputs
from converter.shapes.symbolic_shapes import SymbolicShapes, broadcast, numel

from .infer_shapes import infer_shapes

PASS_VALUES = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Cast", "Identity"}


class IndexRanges:
    """ranges[tensor] = (n, offset): the tensor holds offset, offset + 1, ..., offset + n - 1 along
    its one axis longer than 1 (or holds offset everywhere when n is 1)."""

    def __init__(self, graph: Graph, shapes: SymbolicShapes):
        self.graph, self.shapes = graph, shapes
        self.ranges: dict[str, tuple[Term, int]] = {}
        self.ones: dict[str, Term] = {}     # 1-D ones sized by a term: express_shapes' Range rewrite

    def _scalar(self, name: str) -> int | None:
        value = self.graph.value(name)
        if value is None or value.size != 1:
            return None
        v = float(value.reshape(-1)[0])
        return int(v) if v == int(v) else None

    def _laid_out(self, name: str, n: Term) -> bool:
        """The tensor's extents are all 1 but one, which is n."""
        dims = self.shapes.dims.get(name)
        return dims is not None and (n == 1 or numel(dims) == n and sum(d != 1 for d in dims) <= 1)

    def _constant(self, name: str) -> None:
        """An integer constant holding one value everywhere is a range of length 1."""
        value = self.graph.value(name) if name and name not in self.ranges else None
        if value is not None and value.dtype.kind in "iu" and value.size and np.all(value == value.flat[0]):
            self.ranges[name] = (1, int(value.flat[0]))

    def visit(self, node: Node) -> None:
        for name in node.inputs:
            self._constant(name)
        terms = node.meta.get(SHAPE_TERMS)
        if node.op == "ConstantOfShape" and node.meta.get(FILL_VALUE) == 1.0 and terms and len(terms) == 1:
            self.ones[node.outputs[0]] = self.shapes.canon(terms[0])
        try:
            found = self._rule(node)
        except (IndexError, KeyError, TypeError, ValueError):       # a malformed node: no range
            found = None
        if found is not None and len(node.outputs) == 1 and self._laid_out(node.outputs[0], found[0]):
            self.ranges[node.outputs[0]] = found

    def _sliced_arange(self, node: Node) -> tuple[Term, int] | None:
        """A run-time length cut from a constant c, c + 1, ... (HF's position_ids buffer)."""
        value, sliced = self.graph.value(node.inputs[0]), node.meta[SLICE_TERMS]
        if value is None or value.size < 2 or len(sliced["axes"]) != 1 or not isinstance(sliced["starts"][0], int) \
                or sum(d != 1 for d in value.shape) != 1 or value.shape[sliced["axes"][0]] == 1:
            return None
        flat = value.reshape(-1)
        start = sliced["starts"][0]
        if not np.array_equal(flat, flat[0] + np.arange(flat.size)) or not 0 <= start < flat.size:
            return None
        return self.shapes.canon(op("-", sliced["ends"][0], start)), int(flat[0]) + start

    def _rule(self, node: Node) -> tuple[Term, int] | None:
        ranges = self.ranges
        if node.op == "CumSum" and node.inputs[0] in self.ones and self._scalar(node.inputs[1]) in (0, -1):
            return self.ones[node.inputs[0]], 1
        if node.op == "Slice" and SLICE_TERMS in node.meta:
            return self._sliced_arange(node)
        if node.op == "Expand" and ranges.get(node.inputs[0], (None,))[0] == 1:
            return ranges[node.inputs[0]]
        if node.op in PASS_VALUES and node.inputs[0] in ranges:
            return ranges[node.inputs[0]]
        if node.op in ("Add", "Sub", "Mul") and len(node.inputs) == 2:
            a, b = node.inputs
            if node.op == "Mul":        # integers: 0 * x is 0 (no inf or NaN to keep)
                if self.graph.tensors[node.outputs[0]].dtype.kind not in "iu":
                    return None
                zero = next((x for x in (a, b) if ranges.get(x, (None, 1))[1] == 0 and ranges[x][0] == 1), None)
                return (1, 0) if zero is not None else None
            for x, c in ((a, b), (b, a)) if node.op == "Add" else ((a, b),):
                if x in ranges:
                    shift = self._scalar(c)
                    if shift is None and ranges.get(c) == (1, 0):
                        shift = 0
                    if shift is not None:
                        n, offset = ranges[x]
                        return n, offset + (shift if node.op == "Add" else -shift)
        return None


def _reads_elements_only(graph: Graph, reader: Node, name: str) -> bool:
    """A Reshape of `name` to a target that copies no extent from it."""
    if reader.op != "Reshape" or reader.ncnn or SHAPE_TERMS in reader.meta or reader.inputs[0] != name \
            or reader.inputs.count(name) != 1 or len(reader.inputs) < 2:
        return False
    target = graph.value(reader.inputs[1])
    return target is not None and (reader.attrs.get("allowzero", 0) or not np.any(target == 0))


def _identity_gather(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: IndexRanges) -> bool:
    data, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    dims = shapes.of(data)
    if not dims or indices not in ranges.ranges or out in graph.outputs:
        return False
    n, offset = ranges.ranges[indices]
    axis = int(node.attrs.get("axis", 0)) % len(dims)
    readers = graph.consumers(out)
    if offset != 0 or dims[axis] != n or not readers \
            or not all(_reads_elements_only(graph, r, out) for r in readers):
        return False
    for reader in readers:
        graph.replace_input(reader, 0, data)
    graph.remove_node(node)
    return True


def _unsqueezed_last(graph: Graph, name: str) -> str | None:
    node = graph.producer(name)
    if node is None or node.op != "Unsqueeze" or len(node.inputs) < 2:
        return None
    axes, rank = graph.value(node.inputs[1]), graph.tensors[name].rank
    return node.inputs[0] if axes is not None and rank and [int(a) % rank for a in axes.reshape(-1)] == [rank - 1] \
        else None


def _identity_gather_nd(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: IndexRanges) -> bool:
    """GatherND at (0, ..., arange(n), ..., 0) stacked on a last axis (torch.export's
    `mask[batch_idx, kv_idx]`) reads a tensor that is 1 but along n in order: a Reshape of it."""
    data, out = node.inputs[0], node.outputs[0]
    concat, dims, out_dims = graph.producer(node.inputs[1]), shapes.of(data), shapes.dims.get(out)
    if node.attrs.get("batch_dims", 0) or concat is None or concat.op != "Concat" or dims is None \
            or out_dims is None or out in graph.outputs or len(concat.inputs) != len(dims) \
            or concat.attrs.get("axis") not in (-1, graph.tensors[concat.outputs[0]].rank - 1):
        return False
    varying = 0
    for axis, part in enumerate(concat.inputs):
        source = _unsqueezed_last(graph, part)
        n, offset = ranges.ranges.get(source, (None, None))
        if offset != 0 or (n != 1 or dims[axis] != 1) and n != dims[axis]:
            return False
        varying += n != 1
    known = [d if isinstance(d, int) else -1 for d in out_dims]
    if varying > 1 or known.count(-1) > 1:
        return False
    target = graph.add_constant(f"{out}_shape", np.array(known, np.int64))
    graph.remove_node(node)
    graph.add_node(Node(graph.fresh_name(f"{node.name}_reshape"), "Reshape", [data, target.name], [out],
                        attrs={"allowzero": 0}, origin=node.origin or node.name))
    return True


def _row_range(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: IndexRanges) -> bool:
    """Rows offset .. offset + n - 1 of a constant table, n a run-time size: a Slice of the table
    (ncnn's Crop to an expression), given the indices' unit axes back."""
    table, indices, out = node.inputs[0], node.inputs[1], node.outputs[0]
    found = ranges.ranges.get(indices)
    dims = shapes.dims.get(indices)
    if graph.value(table) is None or not graph.tensors[table].rank or found is None or dims is None \
            or isinstance(found[0], int) \
            or int(node.attrs.get("axis", 0)) % graph.tensors[table].rank != 0:
        return False
    n, offset = found
    rows = graph.add_tensor(Tensor(graph.fresh_name(f"{out}_rows"), (None, *graph.tensors[table].shape[1:]),
                                   graph.tensors[table].dtype))
    cut = Node(graph.fresh_name(f"{node.name}_rows"), "Slice", [table], [rows.name], origin=node.origin or node.name,
               meta={SLICE_TERMS: {"starts": [offset], "ends": [op("+", n, offset)], "axes": [0]}})
    graph.add_node(cut)
    pin_refs(graph, cut, [n])
    unit = [i for i, d in enumerate(dims) if d != n]
    axes = graph.add_constant(f"{out}_unit_axes", np.array(unit, np.int64))
    graph.remove_node(node)
    graph.add_node(Node(graph.fresh_name(f"{node.name}_unsqueeze"), "Unsqueeze", [rows.name, axes.name], [out],
                        origin=node.origin or node.name))
    return True


def _known_range(graph: Graph, node: Node, shapes: SymbolicShapes, ranges: IndexRanges) -> bool:
    """A range of a known length (Range(0, batch) at batch 1) is a constant."""
    out = node.outputs[0] if len(node.outputs) == 1 else None
    dims = shapes.dims.get(out)
    if out is None or out not in ranges.ranges or out in graph.outputs or dims is None \
            or not all(isinstance(d, int) for d in dims):
        return False
    n, offset = ranges.ranges[out]
    value = (np.full(dims, offset) if n == 1 else (offset + np.arange(n)).reshape(dims)).astype(graph.tensors[out].dtype)
    known = graph.add_constant(f"{out}_known", value).name
    ranges.ranges[known], shapes.dims[known] = ranges.ranges[out], dims
    graph.replace_all_uses(out, known)
    graph.remove_node(node)
    return True


def _identity_expand(graph: Graph, node: Node, shapes: SymbolicShapes) -> bool:
    """An Expand (or a Reshape) whose output terms are its input's: its input."""
    x, out = node.inputs[0], node.outputs[0]
    if out in graph.outputs or shapes.dims.get(out) is None or shapes.dims.get(out) != shapes.of(x) \
            or graph.tensors[x].dtype != graph.tensors[out].dtype:
        return False
    graph.replace_all_uses(out, x)
    graph.remove_node(node)
    return True


def _constant_expand(graph: Graph, node: Node, shapes: SymbolicShapes) -> bool:
    """x * ones(terms) whose terms are, axis by axis, 1 or x's own term (kept) or a number where x has 1
    (repeated): Expand(x, that constant shape with 1 where x's extent stays). x * 1 is x, inf and NaN too."""
    if node.op != "Mul" or len(node.inputs) != 2 or graph.tensors[node.outputs[0]].dtype.kind != "f":
        return False
    for x, ones in (node.inputs, node.inputs[::-1]):
        fill = graph.producer(ones)
        if fill is not None and fill.op == "ConstantOfShape" and fill.meta.get(FILL_VALUE) == 1.0 \
                and SHAPE_TERMS in fill.meta and graph.use_count(ones) == 1 and x != ones:
            break
    else:
        return False
    terms, have = [shapes.canon(t) for t in fill.meta[SHAPE_TERMS]], shapes.of(x)
    if have is None or len(have) > len(terms) or graph.tensors[x].dtype != graph.tensors[node.outputs[0]].dtype:
        return False
    target = []
    for d, t in zip((1,) * (len(terms) - len(have)) + tuple(have), terms):
        if t == 1 or t == d:
            target.append(1)
        elif d == 1 and isinstance(t, int):
            target.append(t)
        else:
            return False
    shape = graph.add_constant(f"{node.outputs[0]}_shape", np.array(target, np.int64)).name
    graph.remove_node(node)
    graph.remove_node(fill)
    graph.add_node(Node(node.name, "Expand", [x, shape], list(node.outputs), origin=node.origin))
    return True


def _uniform(graph: Graph, name: str) -> np.ndarray | None:
    value = graph.value(name)
    return value if value is not None and value.size and np.all(value == value.reshape(-1)[0]) else None


def _broadcast_safe(graph: Graph, name: str, shapes: SymbolicShapes) -> bool:
    """Each reader of `name` gives the same result when `name` shrinks to extent 1 along the axes its
    values do not vary on: an elementwise op whose other operands already span its output, or a
    Gather of a constant at these indices whose own readers are such."""
    for reader in graph.consumers(name):
        out = reader.outputs[0] if len(reader.outputs) == 1 else None
        if out is None or out in graph.outputs or reader.inputs.count(name) != 1:
            return False
        if reader.op == "Gather" and reader.inputs[1] == name and graph.value(reader.inputs[0]) is not None:
            if not _broadcast_safe(graph, out, shapes):
                return False
            continue
        others = [shapes.of(i) for i in reader.inputs if i != name]
        if reader.op not in BROADCASTING or not others or None in others \
                or broadcast(others) != shapes.dims.get(out):
            return False
    return True


def _constant_gather(graph: Graph, node: Node, shapes: SymbolicShapes) -> bool:
    """A gather from a constant holding one value everywhere (BERT's token_type_ids buffer of zeros,
    read at run-time positions) is that value, shaped all ones where its readers broadcast it."""
    data, out = _uniform(graph, node.inputs[0]), graph.tensors[node.outputs[0]]
    if data is None or graph.value(node.inputs[1]) is not None or out.shape is None or out.name in graph.outputs \
            or not _broadcast_safe(graph, out.name, shapes):
        return False
    value = graph.add_constant(f"{out.name}_uniform", np.full((1,) * out.rank, data.reshape(-1)[0], data.dtype))
    graph.replace_all_uses(out.name, value.name)
    graph.remove_node(node)
    _fold_gathers(graph, value.name)
    return True


def _fold_gathers(graph: Graph, name: str) -> None:
    """The Gathers _broadcast_safe let through read constants now: fold them (their outputs shrink)."""
    for reader in graph.consumers(name):
        if reader.op == "Gather" and fold_node(graph, reader):
            _fold_gathers(graph, reader.outputs[0])


def _canonical_terms(graph: Graph, node: Node, shapes: SymbolicShapes, related: SymbolicShapes) -> bool:
    """An expression's sizes named by the graph inputs' extents (or numbers) instead of the tensors
    it was written against: a Reshape then no longer reads a tensor inside an attention block. A Resize
    keeps reading the tensor whose size it takes (one blob, no arithmetic) and records both sides' terms
    over the inputs' extents (`related`: through convs and pools too), so its lowering checks only the
    pairs of extents that can meet."""
    if node.op == "Resize" and SHAPE_TERMS in node.meta:
        x = related.of(node.inputs[0])
        node.meta[RESIZE_RELATION] = None if x is None else (x, tuple(related.canon(t) for t in node.meta[SHAPE_TERMS]))
        return False
    if SHAPE_TERMS in node.meta:
        old = node.meta[SHAPE_TERMS]
        new = [shapes.canon(t) for t in old]
        named = new
    elif SLICE_TERMS in node.meta:
        old = node.meta[SLICE_TERMS]
        new = {**old, "starts": [shapes.canon(t) for t in old["starts"]], "ends": [shapes.canon(t) for t in old["ends"]]}
        named = [*new["starts"], *new["ends"]]
    else:
        return False
    if new == old:
        return False
    pins = len(pinned_inputs(node))
    graph.set_inputs(node, node.inputs[:len(node.inputs) - pins])
    node.meta[SHAPE_TERMS if SHAPE_TERMS in node.meta else SLICE_TERMS] = new
    pin_refs(graph, node, named)
    return True


def _fill_numbers(graph: Graph, shapes: SymbolicShapes) -> int:
    filled = 0
    for name, dims in shapes.dims.items():
        t = graph.tensors.get(name)
        if t is None or t.is_constant or t.shape is None or dims is None or len(dims) != len(t.shape):
            continue
        new = tuple(d if d is not None or not isinstance(s, int) else s for d, s in zip(t.shape, dims))
        if new != t.shape:
            t.shape, filled = new, filled + 1
    return filled


def resolve_symbolic_extents(graph: Graph) -> dict:
    math = ShapeMath(graph)
    shapes = SymbolicShapes(graph, lambda name: math.terms.get(name))
    related = SymbolicShapes(graph, lambda name: math.terms.get(name), windows=True)
    ranges = IndexRanges(graph, shapes)
    expands = gathers = uniform = known = renamed = 0
    for node in graph.topological():
        if node.ncnn or node.name not in graph.nodes:
            continue
        math.visit(node)
        cut = bounded_pad(graph, node, related) if node.op == "Pad" and SHAPE_TERMS in node.meta else None
        node, renamed = cut or node, renamed + (cut is not None or _canonical_terms(graph, node, shapes, related))
        shapes.visit(node)
        related.visit(node)
        ranges.visit(node)
        if _known_range(graph, node, shapes, ranges):
            known += 1
            continue
        if node.op in ("Expand", "Reshape") and _identity_expand(graph, node, shapes):
            expands += 1
        elif node.op == "Mul" and _constant_expand(graph, node, shapes):
            expands += 1
        elif node.op == "Gather" and (_identity_gather(graph, node, shapes, ranges)
                                      or _row_range(graph, node, shapes, ranges)):
            gathers += 1
        elif node.op == "GatherND" and _identity_gather_nd(graph, node, shapes, ranges):
            gathers += 1
    for node in [n for n in graph.nodes.values() if n.op in ("Gather", "GatherElements") and not n.ncnn]:
        uniform += _constant_gather(graph, node, shapes)
    filled = _fill_numbers(graph, shapes)
    gathers += uniform
    if expands or gathers or known or renamed:
        remove_dead_shape_math(graph, set(math.terms))
    if expands or gathers or known or renamed or filled:
        graph.remove_unused_tensors()
        infer_shapes(graph)
    return {"terms_renamed": renamed, "identity_reshapes_removed": expands, "identity_gathers_removed": gathers, "extents_resolved": filled}


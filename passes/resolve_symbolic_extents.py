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
  is its data, which those Reshapes read instead; a GatherND at such indices is a Reshape; at indices
  0..m-1, m a run-time size other than n (a sliding layer's own past + new tokens of the mask), a
  Slice of its first m, with ones before that axis;
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
from converter.rewrite.fold import fold_node
from converter.shapes.index_ranges import IndexRanges, broadcast_safe, canonical_terms, fill_numbers
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.runtime_pad import bounded_pad
from converter.shapes.shape_math import ShapeMath, remove_dead_shape_math
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Op, op, pin_refs
from converter.shapes.symbolic_shapes import SymbolicShapes
from converter.rewrite.patterns import unsqueezed_last

from .infer_shapes import infer_shapes


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
    if offset != 0 or not readers or not all(_reads_elements_only(graph, r, out) for r in readers):
        return False
    if dims[axis] != n:
        return _prefix_gather(graph, node, shapes, axis, n, readers)
    for reader in readers:
        graph.replace_input(reader, 0, data)
    graph.remove_node(node)
    return True


def _prefix_gather(graph: Graph, node: Node, shapes: SymbolicShapes, axis: int, n, readers) -> bool:
    """Gather at 0..n-1, n a run-time size other than the axis' (a sliding layer's own past + new
    tokens of a mask that spans the whole history: TorchScript's mask[batch_idx, kv_idx]): with ones
    before the axis its elements come in the order of a Slice to n, which the Reshapes read instead.
    (n is inside the axis: the model's own gather would fail otherwise.)"""
    data, out = node.inputs[0], node.outputs[0]
    dims = shapes.of(data)
    if isinstance(n, int) or any(d != 1 for d in dims[:axis]):
        return False
    t = graph.tensors[data]
    first = graph.add_tensor(Tensor(graph.fresh_name(f"{out}_first"),
                                    tuple(None if i == axis else d for i, d in enumerate(t.shape)), t.dtype))
    cut = Node(graph.fresh_name(f"{node.name}_first"), "Slice", [data], [first.name], origin=node.origin or node.name,
               meta={SLICE_TERMS: {"starts": [0], "ends": [n], "axes": [axis]}})
    graph.add_node(cut)
    pin_refs(graph, cut, [n])
    shapes.dims[first.name] = (*dims[:axis], n, *dims[axis + 1:])     # the walk does not visit it
    for reader in readers:
        graph.replace_input(reader, 0, first.name)
    graph.remove_node(node)
    return True


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
        source = unsqueezed_last(graph, part)
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
        if t == 1 or same_sum(t, d):
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


def same_sum(a, b) -> bool:
    """a == b, or the same addends in another order (torch.export writes past + new and new + past)."""
    def addends(t):
        return addends(t.a) + addends(t.b) if isinstance(t, Op) and t.name == "+" else [t]
    return a == b or sorted(map(repr, addends(a))) == sorted(map(repr, addends(b)))


def _uniform(graph: Graph, name: str) -> np.ndarray | None:
    value = graph.value(name)
    return value if value is not None and value.size and np.all(value == value.reshape(-1)[0]) else None


def _constant_gather(graph: Graph, node: Node, shapes: SymbolicShapes) -> bool:
    """A gather from a constant holding one value everywhere (BERT's token_type_ids buffer of zeros,
    read at run-time positions) is that value, shaped all ones where its readers broadcast it."""
    data, out = _uniform(graph, node.inputs[0]), graph.tensors[node.outputs[0]]
    if data is None or graph.value(node.inputs[1]) is not None or out.shape is None or out.name in graph.outputs \
            or not broadcast_safe(graph, out.name, shapes):
        return False
    value = graph.add_constant(f"{out.name}_uniform", np.full((1,) * out.rank, data.reshape(-1)[0], data.dtype))
    graph.replace_all_uses(out.name, value.name)
    graph.remove_node(node)
    _fold_gathers(graph, value.name)
    return True


def _fold_gathers(graph: Graph, name: str) -> None:
    """The Gathers broadcast_safe let through read constants now: fold them (their outputs shrink)."""
    for reader in graph.consumers(name):
        if reader.op == "Gather" and fold_node(graph, reader):
            _fold_gathers(graph, reader.outputs[0])


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
        node, renamed = cut or node, renamed + (cut is not None or canonical_terms(graph, node, shapes, related))
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
    filled = fill_numbers(graph, shapes)
    gathers += uniform
    if expands or gathers or known or renamed:
        remove_dead_shape_math(graph, set(math.terms))
    if expands or gathers or known or renamed or filled:
        graph.remove_unused_tensors()
        infer_shapes(graph)
    return {"terms_renamed": renamed, "identity_reshapes_removed": expands, "identity_gathers_removed": gathers, "extents_resolved": filled}


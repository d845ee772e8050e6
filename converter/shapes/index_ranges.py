"""What resolve_symbolic_extents and resolve_cache_positions both follow: index tensors known as ranges
(IndexRanges), readers that give the same result on a shrunk operand, expressions renamed onto the
graph inputs' extents, and extents the terms make numbers."""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.op_groups import BROADCASTING
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.symbolic import RESIZE_RELATION, SHAPE_TERMS, SLICE_TERMS, Term, op, pin_refs, pinned_inputs
from converter.shapes.symbolic_shapes import SymbolicShapes
from converter.shapes.term_arithmetic import broadcast, numel

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


def broadcast_safe(graph: Graph, name: str, shapes: SymbolicShapes) -> bool:
    """Each reader of `name` gives the same result when `name` shrinks to extent 1 along the axes its
    values do not vary on: an elementwise op whose other operands already span its output, or a
    Gather of a constant at these indices whose own readers are such."""
    for reader in graph.consumers(name):
        out = reader.outputs[0] if len(reader.outputs) == 1 else None
        if out is None or out in graph.outputs or reader.inputs.count(name) != 1:
            return False
        if reader.op == "Gather" and reader.inputs[1] == name and graph.value(reader.inputs[0]) is not None:
            if not broadcast_safe(graph, out, shapes):
                return False
            continue
        others = [shapes.of(i) for i in reader.inputs if i != name]
        if reader.op not in BROADCASTING or not others or None in others \
                or broadcast(others) != shapes.dims.get(out):
            return False
    return True


def canonical_terms(graph: Graph, node: Node, shapes: SymbolicShapes, related: SymbolicShapes) -> bool:
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


def fill_numbers(graph: Graph, shapes: SymbolicShapes) -> int:
    filled = 0
    for name, dims in shapes.dims.items():
        t = graph.tensors.get(name)
        if t is None or t.is_constant or t.shape is None or dims is None or len(dims) != len(t.shape):
            continue
        new = tuple(d if d is not None or not isinstance(s, int) else s for d, s in zip(t.shape, dims))
        if new != t.shape:
            t.shape, filled = new, filled + 1
    return filled

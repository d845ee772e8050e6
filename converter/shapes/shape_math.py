"""Shape-math tensors (Shape -> Gather/Slice -> Cast -> Concat/Mul/Div ...) followed as lists of terms over
tensor extents (converter/shapes/symbolic.py): what express_shapes and resolve_symbolic_extents read."""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.shapes.symbolic import Op, Term, extent, known_value, op

BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "//", "Max": "max", "Min": "min"}
PASS_THROUGH = {"Cast", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten"}
# ops that keep integer-valued floats integers (a size cast to float for Range); not Div
FLOAT_EXACT = PASS_THROUGH | {"Gather", "Slice", "Concat", "Add", "Sub", "Mul", "Max", "Min"}


def _int_tensor(graph: Graph, name: str) -> bool:
    return graph.tensors[name].dtype.kind in "iu"


class ShapeMath:
    """The terms of every shape-math tensor, worked out in one topological walk."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.terms: dict[str, list[Term]] = {}

    def of(self, name: str) -> list[Term] | None:
        """Terms of a shape-math tensor or of a small integer constant."""
        if name in self.terms:
            return self.terms[name]
        value = self.graph.value(name)
        if value is None or value.ndim > 1 or value.size > 8:
            return None
        if value.dtype.kind in "iu" or (value.dtype.kind == "f" and np.all(value == np.trunc(value))
                                        and np.all(np.abs(value) < 2**31)):
            return [int(v) for v in value.reshape(-1)]
        return None

    def visit(self, node: Node) -> None:
        g = self.graph
        outs = [o for o in node.outputs if o]
        if len(outs) != 1 or g.tensors[outs[0]].is_constant:
            return
        kind = g.tensors[outs[0]].dtype.kind
        if not _int_tensor(g, outs[0]) and not (node.op == "Equal" and kind == "b") \
                and (node.op not in FLOAT_EXACT or kind != "f"):
            return
        result = self._evaluate(node)
        if result is not None:
            self.terms[outs[0]] = result

    def _evaluate(self, node: Node) -> list[Term] | None:
        g = self.graph
        if node.op == "Shape":
            x = g.tensors[node.inputs[0]]
            if x.rank is None:
                return None
            start, end = node.attrs.get("start", 0), node.attrs.get("end", x.rank)
            axes = range(x.rank)[slice(start, end)]
            return [extent(g, x.name, a) for a in axes]
        inputs = [self.of(i) for i in node.inputs if i]
        if node.op in PASS_THROUGH and inputs and inputs[0] is not None:
            return inputs[0] if node.op != "Reshape" or inputs[1] is not None else None
        if node.op == "Gather" and inputs[0] is not None and inputs[1] is not None:
            if node.attrs.get("axis", 0) != 0:
                return None
            n = len(inputs[0])
            try:
                return [inputs[0][i % n if -n <= i < n else n] for i in (known_value(t) for t in inputs[1])]
            except (IndexError, TypeError):
                return None
        if node.op == "Slice" and inputs[0] is not None:
            return self._slice(node, inputs[0])
        if node.op == "Transpose" and inputs[0] is not None:
            rows = _rows(g, node.inputs[0], inputs[0])
            if rows is None:
                return inputs[0] if g.tensors[node.inputs[0]].rank == 1 else None
            return [row[j] for j in range(len(rows[0])) for row in rows] if node.attrs.get("perm") in (None, [1, 0]) \
                else None
        if node.op == "ReduceProd" and len(inputs) == 1 and inputs[0] is not None and node.attrs["keepdims"] \
                and node.attrs.get("axes", [0]) in ([0], [-1]):
            product: Term = 1
            for t in inputs[0]:
                product = op("*", product, t)
            return [product]
        if node.op == "Concat" and all(t is not None for t in inputs):
            return [t for part in inputs for t in part]
        if node.op in ("Equal", "Where"):
            return _select(node.op, inputs)
        if node.op in BINARY and len(inputs) == 2 and all(t is not None for t in inputs):
            a, b = inputs
            if len(a) != len(b) and 1 not in (len(a), len(b)):
                return None
            n = max(len(a), len(b))
            a, b = (a * n if len(a) == 1 else a), (b * n if len(b) == 1 else b)
            try:
                return [op(BINARY[node.op], x, y) for x, y in zip(a, b)]
            except ValueError:
                return None
        return None

    def _slice(self, node: Node, data: list[Term]) -> list[Term] | None:
        g = self.graph
        values = [g.value(i) if i else None for i in node.inputs[1:]]
        if len(values) < 2 or values[0] is None or values[1] is None:
            return None
        if any(v is not None and v.size != 1 for v in values):
            return None
        axis = 0 if len(values) < 3 or values[2] is None else int(values[2].reshape(-1)[0])
        step = 1 if len(values) < 4 or values[3] is None else int(values[3].reshape(-1)[0])
        start, stop = int(values[0].reshape(-1)[0]), int(values[1].reshape(-1)[0])
        cut = slice(start, max(min(stop, 2**31), -2**31), step)       # ONNX's clamping is Python's
        if step == 0:
            return None
        rows = _rows(g, node.inputs[0], data)
        if rows is None:
            return data[cut] if axis in (0, -1) and g.tensors[node.inputs[0]].rank in (None, 1) else None
        return [t for row in rows[cut] for t in row] if axis in (0, -2) else None    # whole rows


def _rows(graph: Graph, name: str, data: list[Term]) -> list[list[Term]] | None:
    """A 2-D shape tensor's rows (torch's F.pad reverses the (begin, end) pairs as rows), else None."""
    shape = graph.tensors[name].shape
    if shape is None or len(shape) != 2 or None in shape or shape[0] * shape[1] != len(data):
        return None
    width = int(shape[1])
    return [data[k:k + width] for k in range(0, len(data), width)]


def _nonnegative(term: Term) -> bool:
    """An extent, or sums, products, quotients, max/min of extents and non-negative numbers."""
    if isinstance(term, int):
        return term >= 0
    if isinstance(term, Op):
        return term.name in ("+", "*", "//", "max", "min") and _nonnegative(term.a) and _nonnegative(term.b)
    return True


def _equal(a: Term, b: Term) -> int | None:
    """1 or 0 where known: equal numbers or terms, or an extent against a negative number (torch's
    expand writes Where(shape == -1, 1, shape), and a size is never -1)."""
    if a == b:
        return 1
    if isinstance(a, int) and isinstance(b, int):
        return 0
    for x, y in ((a, b), (b, a)):
        if isinstance(y, int) and y < 0 and _nonnegative(x):
            return 0
    return None


def _select(kind: str, inputs: list) -> list[Term] | None:
    """Equal of two shape vectors, Where(condition, x, y) over them; None where a condition is open."""
    if any(t is None for t in inputs) or len(inputs) != (2 if kind == "Equal" else 3):
        return None
    n = max(len(t) for t in inputs)
    if any(len(t) not in (1, n) for t in inputs):
        return None
    a, b, *c = [t * n if len(t) == 1 else t for t in inputs]
    if kind == "Equal":
        result = [_equal(x, y) for x, y in zip(a, b)]
        return None if None in result else result
    if any(not isinstance(x, int) for x in a):
        return None
    return [y if x else z for x, y, z in zip(a, b, c[0])]


def remove_dead_shape_math(graph: Graph, shape_tensors: set[str]) -> None:
    """Shape-math nodes whose every output is read by nobody now (one reverse walk)."""
    for node in reversed(graph.topological()):
        outs = [o for o in node.outputs if o]
        if not node.ncnn and outs and all(o in shape_tensors or graph.tensors[o].dtype.kind in "iu" for o in outs) \
                and all(graph.use_count(o) == 0 for o in outs):
            graph.remove_node(node)
    graph.remove_unused_tensors()

"""Sizes computed at run time become ncnn expressions instead of a request for --input-shape.

Exporters compute a Reshape's target from the shapes of run-time tensors
(Shape -> Gather/Slice -> Cast -> Concat/Mul/Div -> Reshape). fold_constants folds
such chains when the extents are known; this pass handles the rest: one walk gives
every shape-math tensor a list of terms over tensor extents (converter/symbolic.py),
a Reshape fed by such a tensor keeps the terms for its lowering (ncnn Reshape
6=shape_expr, reading the referenced tensors as extra bottoms), so does a Resize
to such sizes (Interp 9=size_expr), float tensors sized
by them (ConstantOfShape, Range, Expand: anchor grids) are rewritten over a filled
tensor of run-time shape (converter/runtime_fill.py), and the shape-math nodes
nothing else reads are removed. Reshape outputs get the shape the terms give,
and shapes are inferred again downstream; rounds repeat while they make progress
(a shape read from a reshaped tensor needs the next round).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.runtime_fill import express_expand, express_fill, express_range, express_size_value
from converter.symbolic import SHAPE_TERMS, SLICE_TERMS, Op, Term, extent, known_value, op, pin_refs

from .infer_shapes import infer_shapes

# a Shape read from a tensor downstream of an expressed Reshape waits for the next round, so rounds
# follow chains of such blocks (a transformer layer each); each round is one linear walk
MAX_ROUNDS = 64

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


def _express_reshapes(graph: Graph) -> int:
    math = ShapeMath(graph)
    expressed = 0
    for node in graph.topological():
        if node.ncnn:
            continue
        math.visit(node)
        if node.op == "Reshape" and len(node.inputs) > 1 and node.inputs[1] in math.terms \
                and graph.tensors[node.inputs[0]].rank is not None:     # else: next round, once inferred
            _express(graph, node, math.terms[node.inputs[1]])
            expressed += 1
        elif node.op == "Slice":
            expressed += _express_slice(graph, node, math)
        elif node.op == "Resize":
            expressed += _express_resize(graph, node, math)
        elif node.op == "Pad":
            expressed += _express_pad(graph, node, math)
        else:
            expressed += _express_fill(graph, node, math)
    if expressed:
        remove_dead_shape_math(graph, set(math.terms))
    return expressed


def _express_slice(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A Slice of data whose starts or ends are run-time sizes keeps them as terms (lowered to Crop
    19/20/21 expressions); axes and steps must be constants, steps 1."""
    x = graph.tensors[node.inputs[0]]
    bounds = node.inputs[1:3]
    if x.name in math.terms or x.rank is None or len(bounds) < 2 \
            or not any(b in math.terms for b in bounds):
        return False
    starts, ends = math.of(bounds[0]), math.of(bounds[1])
    axes_name, steps_name = (list(node.inputs[3:5]) + ["", ""])[:2]
    axes = graph.value(axes_name) if axes_name else np.arange(len(starts or []))
    steps_are_one = not steps_name or (graph.value(steps_name) is not None and np.all(graph.value(steps_name) == 1))
    if starts is None or ends is None or axes is None or not len(starts) == len(ends) == axes.size \
            or not steps_are_one:
        return False
    axes = [int(a) % x.rank if -x.rank <= int(a) < x.rank else int(a) for a in axes.reshape(-1)]
    node.attrs[SLICE_TERMS] = {"starts": starts, "ends": ends, "axes": axes}
    graph.set_inputs(node, [x.name])
    pin_refs(graph, node, [*starts, *ends])
    out = graph.tensors[node.outputs[0]]
    sliced = set(axes)
    out.shape = None if x.shape is None else tuple(d if i not in sliced else None for i, d in enumerate(x.shape))
    return True


def _express_resize(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A Resize to sizes computed from run-time extents (`F.interpolate(x, size=skip.shape[-2:])`)
    keeps them as terms, one per axis of its input (lowered to Interp's 9= size expression)."""
    x = graph.tensors[node.inputs[0]]
    sizes = node.inputs[3] if len(node.inputs) > 3 else ""
    if sizes not in math.terms or x.rank is None:
        return False
    listed = [int(a) % x.rank for a in node.attrs.get("axes", range(x.rank))]
    if len(listed) != len(math.terms[sizes]):
        return False
    target = [extent(graph, x.name, i) for i in range(x.rank)]
    for axis, term in zip(listed, math.terms[sizes]):
        target[axis] = term
    node.attrs[SHAPE_TERMS] = target
    node.attrs.pop("axes", None)
    graph.replace_input(node, 3, "")
    pin_refs(graph, node, target)
    out = graph.tensors[node.outputs[0]]
    known = tuple(known_value(t) for t in target)
    out.shape = known if out.shape is None or len(out.shape) != len(known) else \
        tuple(o if o is not None else k for o, k in zip(out.shape, known))
    return True


def _express_pad(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A Pad by amounts computed from run-time extents (the classic U-Net's `F.pad(up, [dx // 2, ...])`)
    keeps them as terms; resolve_symbolic_extents makes it a crop where they can never be positive."""
    x = graph.tensors[node.inputs[0]]
    pads = math.terms.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if pads is None or x.rank is None or len(pads) != 2 * x.rank or (len(node.inputs) > 3 and node.inputs[3]):
        return False
    node.attrs[SHAPE_TERMS] = pads
    graph.replace_input(node, 1, "")
    pin_refs(graph, node, pads)
    graph.tensors[node.outputs[0]].shape = None if x.shape is None else tuple(
        d if pads[i] == 0 and pads[i + x.rank] == 0 else None for i, d in enumerate(x.shape))
    return True


def _express_fill(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """Float tensors sized by shape math: filled tensors, index ranges, expansions."""
    sizes = [math.terms.get(i) if i else None for i in node.inputs]
    if node.op == "ConstantOfShape" and sizes and sizes[0] is not None:
        return express_fill(graph, node, sizes[0])
    if node.op == "Range" and len(sizes) == 3 and sizes[1] is not None and len(sizes[1]) == 1:
        return express_range(graph, node, sizes[1][0])
    if node.op == "Expand" and len(sizes) == 2 and sizes[1] is not None:
        return express_expand(graph, node, sizes[1])
    if node.op in BINARY and len(sizes) == 2 and (sizes[0] is None) != (sizes[1] is None):
        return express_size_value(graph, node, sizes, math)
    return False


def _express(graph: Graph, node: Node, terms: list[Term]) -> None:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    allowzero = node.attrs.get("allowzero", 0)
    target = [extent(graph, x.name, i) if t == 0 and not allowzero and x.rank and i < x.rank else t
              for i, t in enumerate(terms)]
    node.attrs[SHAPE_TERMS] = target
    graph.replace_input(node, 1, "")
    pin_refs(graph, node, target)
    shape = [known_value(t) if known_value(t) != -1 else None for t in target]
    if -1 in target and x.shape is not None and None not in x.shape and None not in shape[:target.index(-1)] \
            and all(s is not None for i, s in enumerate(shape) if target[i] != -1):
        rest = int(np.prod([s for i, s in enumerate(shape) if target[i] != -1]))
        shape[target.index(-1)] = int(np.prod(x.shape)) // rest if rest else None
    if out.shape is None or len(out.shape) != len(shape):
        out.shape = tuple(shape)
    else:
        out.shape = tuple(o if o is not None else s for o, s in zip(out.shape, shape))


def remove_dead_shape_math(graph: Graph, shape_tensors: set[str]) -> None:
    """Shape-math nodes whose every output is read by nobody now (one reverse walk)."""
    for node in reversed(graph.topological()):
        outs = [o for o in node.outputs if o]
        if not node.ncnn and outs and all(o in shape_tensors or graph.tensors[o].dtype.kind in "iu" for o in outs) \
                and all(graph.use_count(o) == 0 for o in outs):
            graph.remove_node(node)
    graph.remove_unused_tensors()


def express_shapes(graph: Graph) -> dict:
    total = 0
    for _ in range(MAX_ROUNDS):
        done = _express_reshapes(graph)
        total += done
        if not done:
            break
        infer_shapes(graph)
    return {"reshapes_expressed": total}

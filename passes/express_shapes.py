"""Sizes computed at run time become ncnn expressions instead of a request for --input-shape.

Exporters compute a Reshape's target from the shapes of run-time tensors
(Shape -> Gather/Slice -> Cast -> Concat/Mul/Div -> Reshape). fold_constants folds
such chains when the extents are known; this pass handles the rest: one walk gives
every shape-math tensor a list of terms over tensor extents (converter/shapes/symbolic.py),
a Reshape fed by such a tensor keeps the terms for its lowering (ncnn Reshape
6=shape_expr, reading the referenced tensors as extra bottoms), so does a Resize
to such sizes (Interp 9=size_expr), float tensors sized
by them (ConstantOfShape, Range, Expand: anchor grids) are rewritten over a filled
tensor of run-time shape (converter/shapes/runtime_fill.py), and the shape-math nodes
nothing else reads are removed. Reshape outputs get the shape the terms give,
and shapes are inferred again downstream; rounds repeat while they make progress
(a shape read from a reshaped tensor needs the next round).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.op_table import OpTable
from converter.shapes.runtime_fill import express_expand, express_fill, express_range, express_size_value, shift_range_start
from converter.shapes.shape_math import BINARY, ShapeMath, remove_dead_shape_math
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Term, extent, known_value, pin_refs

from .infer_shapes import infer_shapes

# what each op does with run-time sizes among its inputs: True where it now keeps them as terms
EXPRESSIONS = OpTable("run-time size expression")

# a Shape read from a tensor downstream of an expressed Reshape waits for the next round, so rounds
# follow chains of such blocks (a transformer layer each); each round is one linear walk
MAX_ROUNDS = 64


def _express_reshapes(graph: Graph) -> int:
    math = ShapeMath(graph)
    expressed = 0
    for node in graph.topological():
        if node.ncnn:
            continue
        math.visit(node)
        express = EXPRESSIONS.get(node.op)         # ops without an entry read no run-time sizes here
        if express is not None:
            expressed += express(graph, node, math)
    if expressed:
        remove_dead_shape_math(graph, set(math.terms))
    return expressed


@EXPRESSIONS.register("Reshape")
def _express_reshape(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A Reshape to a shape-math target keeps its terms (ncnn Reshape 6= shape_expr)."""
    if len(node.inputs) > 1 and node.inputs[1] in math.terms \
            and graph.tensors[node.inputs[0]].rank is not None:     # else: next round, once inferred
        _express(graph, node, math.terms[node.inputs[1]])
        return True
    return False


@EXPRESSIONS.register("Slice")
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
    node.meta[SLICE_TERMS] = {"starts": starts, "ends": ends, "axes": axes}
    graph.set_inputs(node, [x.name])
    pin_refs(graph, node, [*starts, *ends])
    out = graph.tensors[node.outputs[0]]
    sliced = set(axes)
    out.shape = None if x.shape is None else tuple(d if i not in sliced else None for i, d in enumerate(x.shape))
    return True


@EXPRESSIONS.register("Resize")
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
    node.meta[SHAPE_TERMS] = target
    node.attrs.pop("axes", None)
    graph.replace_input(node, 3, "")
    pin_refs(graph, node, target)
    out = graph.tensors[node.outputs[0]]
    known = tuple(known_value(t) for t in target)
    out.shape = known if out.shape is None or len(out.shape) != len(known) else \
        tuple(o if o is not None else k for o, k in zip(out.shape, known))
    return True


@EXPRESSIONS.register("Pad")
def _express_pad(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A Pad by amounts computed from run-time extents (the classic U-Net's `F.pad(up, [dx // 2, ...])`)
    keeps them as terms; resolve_symbolic_extents makes it a crop where they can never be positive."""
    x = graph.tensors[node.inputs[0]]
    pads = math.terms.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if pads is None or x.rank is None or len(pads) != 2 * x.rank or (len(node.inputs) > 3 and node.inputs[3]):
        return False
    node.meta[SHAPE_TERMS] = pads
    graph.replace_input(node, 1, "")
    pin_refs(graph, node, pads)
    graph.tensors[node.outputs[0]].shape = None if x.shape is None else tuple(
        d if pads[i] == 0 and pads[i + x.rank] == 0 else None for i, d in enumerate(x.shape))
    return True


@EXPRESSIONS.register("ConstantOfShape")
def _express_constant_of_shape(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """A float tensor filled to a run-time shape."""
    sizes = math.terms.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    return express_fill(graph, node, sizes) if sizes is not None else False


@EXPRESSIONS.register("Range")
def _express_range(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """An index range up to a run-time limit (from a run-time start: shifted to start at 0 first)."""
    sizes = _sizes(node, math)
    if len(sizes) == 3 and sizes[0] is not None and sizes[1] is not None:
        return shift_range_start(graph, node)
    return express_range(graph, node, sizes[1][0]) if len(sizes) == 3 and sizes[1] is not None \
        and len(sizes[1]) == 1 else False


@EXPRESSIONS.register("Expand")
def _express_expand(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """An expansion to a run-time shape."""
    sizes = _sizes(node, math)
    return express_expand(graph, node, sizes[1]) if len(sizes) == 2 and sizes[1] is not None else False


@EXPRESSIONS.register(*BINARY)
def _express_size_value(graph: Graph, node: Node, math: ShapeMath) -> bool:
    """Data arithmetic with one run-time size as an operand."""
    sizes = _sizes(node, math)
    if len(sizes) == 2 and (sizes[0] is None) != (sizes[1] is None):
        return express_size_value(graph, node, sizes, math)
    return False


def _sizes(node: Node, math: ShapeMath) -> list:
    return [math.terms.get(i) if i else None for i in node.inputs]


def _express(graph: Graph, node: Node, terms: list[Term]) -> None:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    allowzero = node.attrs.get("allowzero", 0)
    target = [extent(graph, x.name, i) if t == 0 and not allowzero and x.rank and i < x.rank else t
              for i, t in enumerate(terms)]
    node.meta[SHAPE_TERMS] = target
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


def express_shapes(graph: Graph) -> dict:
    total = 0
    for _ in range(MAX_ROUNDS):
        done = _express_reshapes(graph)
        total += done
        if not done:
            break
        infer_shapes(graph)
    return {"reshapes_expressed": total}

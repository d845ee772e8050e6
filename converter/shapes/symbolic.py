"""Sizes known only at run time, as terms over tensor extents, rendered as ncnn expressions.

A term is an int, an extent reference `Ref(tensor, onnx_axis)`, or `Op(name, a, b)`.
Shape-math tensors (Shape -> Gather/Slice/Concat/Cast/Add/Mul/Div...) get one term
per element; a consumer that ncnn can give an expression param (Reshape 6=) renders
its terms against its own input blobs: each referenced tensor becomes one more bottom
of the layer, its extent named w/h/d/c by its ncnn axis, its batch axis the number 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import axis_name
from converter.ncnn_side.expression import Expr

MAX_BLOBS = 10      # an expression names blobs 0..9


@dataclass(frozen=True)
class Ref:
    tensor: str
    axis: int          # ONNX axis, non-negative


@dataclass(frozen=True)
class Op:
    name: str          # "+", "-", "*", "//", "max", "min"
    a: "Term"
    b: "Term"


Term = int | Ref | Op

_FOLD = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
         "//": lambda a, b: int(a / b), "max": max, "min": min}


def op(name: str, a: Term, b: Term) -> Term:
    """`name(a, b)`, folded when both are numbers; x*1, x+0, x//1 simplify to x."""
    if isinstance(a, int) and isinstance(b, int):
        if name == "//" and b == 0:
            raise ValueError("division by zero in shape math")
        return _FOLD[name](a, b)
    if (name in ("*", "//") and b == 1) or (name in ("+", "-") and b == 0):
        return a
    if name in ("+", "-") and isinstance(b, int) and isinstance(a, Op) and a.name == "+" and isinstance(a.b, int):
        return op("+", a.a, a.b + (b if name == "+" else -b))      # (x + 2) - 3 is x + -1: shorter expressions
    if name == "-" and a == b:
        return 0
    if name == "-" and isinstance(a, Op) and a.name == "+" and b in (a.a, a.b):
        return a.b if b == a.a else a.a                             # (x + y) - x is y: a cache's new length
    if name == "-" and isinstance(b, int):
        return op("+", a, -b)
    if (name == "*" and a == 1) or (name == "+" and a == 0):
        return b
    return Op(name, a, b)


def extent(graph: Graph, tensor: str, axis: int) -> Term:
    """The term for one extent: its number when known (the batch axis is 1), else a reference."""
    t = graph.tensors[tensor]
    if axis == t.batch_axis:
        return 1
    if t.shape is not None and t.shape[axis] is not None:
        return int(t.shape[axis])
    return Ref(tensor, axis)


def known_value(term: Term) -> int | None:
    return term if isinstance(term, int) else None


def refs(term: Term) -> list[Ref]:
    if isinstance(term, Ref):
        return [term]
    if isinstance(term, Op):
        return refs(term.a) + refs(term.b)
    return []


# node.meta keys (what express_shapes and friends leave for later passes and lowerings)
REFS = "term_refs"          # the tensors a node's terms read, also its last inputs
SHAPE_TERMS = "shape_terms"     # an expressed Reshape, fill or Resize: its target/shape terms
RESIZE_RELATION = "resize_relation"    # an expressed Resize: (input terms, output terms), both over the
#                                       graph inputs' extents, for checking which sizes meet
SLICE_TERMS = "slice_terms"     # an expressed Slice: starts, ends (terms), axes
# a node carrying any of these is no longer what its ONNX op says (its target became an expression)
EXPRESSED = (REFS, SHAPE_TERMS, RESIZE_RELATION, SLICE_TERMS)


def pin_refs(graph: Graph, node: Node, terms: list[Term]) -> None:
    """Make the tensors `terms` read the last inputs of `node`: rewrites before lowering (fusions,
    Identity removal) then see them used and rename them there, not only inside the terms."""
    names = sorted({r.tensor for t in terms for r in refs(t)})
    node.meta[REFS] = names
    graph.set_inputs(node, [*node.inputs, *names])


def pinned_inputs(node: Node) -> list[str]:
    return node.inputs[len(node.inputs) - len(node.meta.get(REFS, [])):] if node.meta.get(REFS) else []


class Renderer:
    """Turns terms into an ncnn expression for a layer whose bottom 0 is `first`;
    every other referenced tensor is appended to `bottoms`. A node's pinned inputs
    (pin_refs) stand for the tensors its terms were written against."""

    def __init__(self, graph: Graph, first: str, node: Node | None = None):
        self.graph = graph
        self.bottoms = [first]
        names = node.meta.get(REFS, []) if node is not None else []
        self.current = dict(zip(names, pinned_inputs(node))) if names else {}

    def blob(self, tensor: str) -> int:
        tensor = self.current.get(tensor, tensor)
        if tensor not in self.bottoms:
            if len(self.bottoms) == MAX_BLOBS:
                raise ValueError(f"the expression would read more than {MAX_BLOBS} blobs")
            self.bottoms.append(tensor)
        return self.bottoms.index(tensor)

    def render(self, term: Term) -> Expr:
        if isinstance(term, int):
            return Expr.const(term)
        if isinstance(term, Op):
            a, b = self.render(term.a), self.render(term.b)
            return {"+": a.__add__, "-": a.__sub__, "*": a.__mul__, "//": a.__floordiv__}.get(
                term.name, lambda o: a.call(term.name, o))(b)
        t: Tensor = self.graph.tensors[self.current.get(term.tensor, term.tensor)]
        axis = t.ncnn_axis(term.axis)
        if axis is None:
            return Expr.const(1)
        rank = len(t.ncnn_shape)
        return Expr.ref(self.blob(term.tensor), axis_name(rank, axis))

"""Every tensor's extents as terms over the graph inputs' run-time extents (converter/shapes/symbolic.py).

onnx's shape inference gives each unknown extent a name of its own, so it cannot tell that a BERT's
hidden states (1, S, 32) and its mask (1, 1, S, S) share S, or that Expand(x, [1, S]) of x (1, S)
changes nothing. One topological walk here gives each tensor a tuple of terms: a number, a graph
input's extent `Ref(input, axis)` (inputs whose dims share a dim_param share one Ref: ONNX's rule),
or arithmetic on those (a sliding-window layer's past, its present cut to the last rows, is a length
of its own whatever its dim_param: TorchScript names every past `past`, equal only within the
window). What no rule covers gets a fresh symbol `Ref(tensor, axis)`, equal only to itself, so a
term is never claimed equal to another without a reason.

Assumed, as the model's own validity implies: operands that broadcast together have equal extents
or extents of 1, a Slice to a run-time end stays inside its data (torch's `x[:, :S]`), and a Conv's
or pooling's window fits its padded input (the floor division then has a non-negative numerator).
"""
from __future__ import annotations

from typing import Callable

from converter.ir import Graph, Node
from converter.shapes.decoder_layout import related_extents, sliding_pasts
from converter.shapes.extent_rules import EXTENT_RULES, split_pieces
from converter.shapes.symbolic import Op, Ref, Term, op
# the term arithmetic once lived here: importers of these names still find them
from converter.shapes.term_arithmetic import Dims, broadcast, evaluate, numel, quotient, symbols  # noqa: F401


class SymbolicShapes:
    """dims[tensor] -> terms, filled by visit(node) in topological order. `shape_terms(name)` gives
    the terms of a shape-math tensor (an Expand's or Reshape's target), or None. With `windows`, the
    extents Conv, pooling, ConvTranspose, whole-scale Resize and run-time Pads make are formulas of
    their inputs' (else symbols of their own): what relates two sides of a resize or a pad, too long to
    name in an expression (YOLOv8's head would read a 400-character sum of conv formulas)."""

    def __init__(self, graph: Graph, shape_terms: Callable[[str], list | None] = lambda name: None,
                 windows: bool = False):
        self.graph, self.shape_terms, self.windows = graph, shape_terms, windows
        self.dims: dict[str, Dims] = {}
        named: dict[str, Ref] = {}
        sliding = sliding_pasts(graph)      # a sliding layer's past is its own length, whatever its dim_param
        for name in graph.inputs:
            t = graph.tensors[name]
            if t.shape is None:
                continue
            terms = []
            for axis, d in enumerate(t.shape):
                if axis == t.batch_axis:
                    terms.append(1)
                elif d is not None:
                    terms.append(int(d))
                else:
                    dim_name = None if name in sliding else graph.dim_names.get((name, axis))
                    ref = named.setdefault(dim_name, Ref(name, axis)) if dim_name else Ref(name, axis)
                    terms.append(ref)
            self.dims[name] = tuple(terms)
        self.dims.update(related_extents(graph, self.dims))     # a decoder's mask is past + new tokens long

    def of(self, name: str) -> Dims | None:
        if name in self.dims:
            return self.dims[name]
        t = self.graph.tensors.get(name)
        if t is None or t.shape is None:
            return None
        if t.is_constant:
            return tuple(int(d) for d in t.value.shape)
        return tuple(int(d) if d is not None else Ref(name, i) for i, d in enumerate(t.shape))

    def canon(self, term: Term) -> Term:
        """A term with every extent reference replaced by that extent's own term."""
        if isinstance(term, Ref):
            dims = self.dims.get(term.tensor)
            return dims[term.axis] if dims is not None and term.axis < len(dims) else term
        if isinstance(term, Op):
            return op(term.name, self.canon(term.a), self.canon(term.b))
        return term

    def visit(self, node: Node) -> None:
        outs = [o for o in node.outputs if o]
        if not outs:
            return
        rule = EXTENT_RULES.get(node.op)        # the op's rule (converter/shapes/extent_rules.py), if any
        try:
            found = None if rule is None else rule(self, node, [self.of(i) if i else None for i in node.inputs])
        except (ValueError, IndexError, TypeError, ZeroDivisionError):     # a malformed node: no rule
            found = None
        if node.op == "Split" and found is None:
            found = split_pieces(self, node)
        elif found is not None:
            found = [found] if len(outs) == 1 else None
        for k, o in enumerate(outs):
            shape = self.graph.tensors[o].shape
            if found is not None and (shape is None or len(shape) == len(found[k]) and all(
                    d is None or not isinstance(f, int) or d == f for d, f in zip(shape, found[k]))):
                # an axis no rule could follow is a symbol of its own (or the number already known)
                own = self.of(o) if shape is not None else tuple(Ref(o, i) for i in range(len(found[k])))
                self.dims[o] = tuple(f if f is not None else own[i] for i, f in enumerate(found[k]))
            else:
                self.dims[o] = self.of(o)

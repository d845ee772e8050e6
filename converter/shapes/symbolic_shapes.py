"""Every tensor's extents as terms over the graph inputs' run-time extents (converter/shapes/symbolic.py).

onnx's shape inference gives each unknown extent a name of its own, so it cannot tell that a BERT's
hidden states (1, S, 32) and its mask (1, 1, S, S) share S, or that Expand(x, [1, S]) of x (1, S)
changes nothing. One topological walk here gives each tensor a tuple of terms: a number, a graph
input's extent `Ref(input, axis)` (inputs whose dims share a dim_param share one Ref: ONNX's rule),
or arithmetic on those. What no rule covers gets a fresh symbol `Ref(tensor, axis)`, equal only to
itself, so a term is never claimed equal to another without a reason.

Assumed, as the model's own validity implies: operands that broadcast together have equal extents
or extents of 1, a Slice to a run-time end stays inside its data (torch's `x[:, :S]`), and a Conv's
or pooling's window fits its padded input (the floor division then has a non-negative numerator).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from converter.ir import Graph, Node
from converter.op_groups import BROADCASTING, REDUCE, UNARY_ELEMENTWISE
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Op, Ref, Term, op, refs
from converter.shapes.window_extents import WINDOWED, transposed_extents, windowed_extents
from converter.shapes.decoder_layout import related_extents

Dims = tuple[Term, ...]
SAME_SHAPE = UNARY_ELEMENTWISE | {"Softmax", "LogSoftmax", "LayerNormalization", "CumSum", "Dropout",
                                  "InstanceNormalization", "BatchNormalization", "SimplifiedLayerNormalization",
                                  "RMSNormalization", "RotaryEmbed"}   # RotaryEmbed: fuse_rotary_embed's ncnn layer


def _factors(term: Term) -> tuple[int, list[Term]] | None:
    """term as coefficient * product of symbols, when it is one."""
    if isinstance(term, int):
        return term, []
    if isinstance(term, Op):
        if term.name != "*":
            return 1, [term]
        a, b = _factors(term.a), _factors(term.b)
        return None if a is None or b is None else (a[0] * b[0], a[1] + b[1])
    return 1, [term]


def _product(coef: int, symbols: list[Term]) -> Term:
    result: Term = coef
    for s in sorted(symbols, key=repr):
        result = op("*", result, s)
    return result


def quotient(total: list[Term], known: list[Term]) -> Term | None:
    """prod(total) / prod(known) when the symbols cancel and the numbers divide, else None."""
    num, den = _factors(_product(1, [t for t in total])), _factors(_product(1, [t for t in known]))
    if num is None or den is None or den[0] == 0 or num[0] % den[0]:
        return None
    rest = list(num[1])
    for s in den[1]:
        if s not in rest:
            return None
        rest.remove(s)
    return _product(num[0] // den[0], rest)


def broadcast(shapes: list[Dims]) -> Dims:
    """numpy's rule over terms; an axis where two different symbols meet (either could be 1) is
    None, unknown, unless they are formulas of the same extents: then the larger (equal, or one is 1),
    so that an FPN level's sum of a lateral conv and a resized coarser level still reads the input's H."""
    rank = max(len(s) for s in shapes)
    result = []
    for axis in range(rank):
        seen = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        numbers = {t for t in seen if isinstance(t, int)}
        result.append(None if None in seen else numbers.pop() if numbers
                      else _larger(sorted(seen, key=repr)) if len(seen) > 1 else seen.pop() if seen else 1)
    return tuple(result)


def _larger(terms: list[Term]) -> Term | None:
    reads = {frozenset(refs(t)) for t in terms}
    if len(reads) != 1 or not next(iter(reads)):
        return None
    result = terms[0]
    for t in terms[1:]:
        result = op("max", result, t)
    return result


class SymbolicShapes:
    """dims[tensor] -> terms, filled by visit(node) in topological order. `shape_terms(name)` gives
    the terms of a shape-math tensor (an Expand's or Reshape's target), or None. With `windows`, the
    extents Conv, pooling, ConvTranspose, whole-scale Resize and run-time Pads make are formulas of
    their inputs' (else symbols of their own): what relates two sides of a resize or a pad, too long to
    name in an expression (YOLOv8's head would read a 400-character sum of conv formulas)."""

    def __init__(self, graph: Graph, shape_terms: Callable[[str], list[Term] | None] = lambda name: None,
                 windows: bool = False):
        self.graph, self.shape_terms, self.windows = graph, shape_terms, windows
        self.dims: dict[str, Dims] = {}
        named: dict[str, Ref] = {}
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
                    dim_name = graph.dim_names.get((name, axis))
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
        try:
            found = self._rule(node)
        except (ValueError, IndexError, TypeError, ZeroDivisionError):     # a malformed node: no rule
            found = None
        if node.op == "Split" and found is None:
            found = self._split(node)
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

    def _split(self, node: Node) -> list[Dims] | None:
        """Split's pieces: the input's terms but along the axis, where each piece's own extent is
        known (constant split sizes, or known output shapes)."""
        x = self.of(node.inputs[0])
        if not x:
            return None
        axis = node.attrs.get("axis", 0) % len(x)
        pieces = []
        for o in node.outputs:
            shape = self.graph.tensors[o].shape if o else None
            if shape is None or len(shape) != len(x) or shape[axis] is None:
                return None
            pieces.append((*x[:axis], int(shape[axis]), *x[axis + 1:]))
        return pieces

    def _rule(self, node: Node) -> Dims | None:
        g = self.graph
        ins = [self.of(i) if i else None for i in node.inputs]
        attrs, meta = node.attrs, node.meta
        if node.op in SAME_SHAPE and ins and ins[0] is not None:
            return ins[0]
        if node.op in BROADCASTING and ins and all(s is not None for s in ins):
            return broadcast(ins)
        if SHAPE_TERMS in meta and node.op in ("Reshape", "ConstantOfShape"):
            return self._reshape(ins[0] if node.op == "Reshape" else None, meta[SHAPE_TERMS])
        if SHAPE_TERMS in meta and node.op == "Resize":        # sizes as terms, one per axis
            return tuple(self.canon(t) for t in meta[SHAPE_TERMS])
        if self.windows and node.op == "Resize" and len(node.inputs) > 2 and node.inputs[2] and ins[0] is not None:
            scales = g.value(node.inputs[2])                    # whole scales: the extent times the scale
            if scales is not None and scales.size == len(ins[0]) and "axes" not in attrs \
                    and np.all(scales == np.round(scales)) and np.all(scales >= 1):
                return tuple(op("*", d, int(k)) for d, k in zip(ins[0], scales.reshape(-1)))
        if self.windows and SHAPE_TERMS in meta and node.op == "Pad" and ins[0] is not None \
                and 2 * len(ins[0]) == len(meta[SHAPE_TERMS]):
            pads, rank = [self.canon(t) for t in meta[SHAPE_TERMS]], len(ins[0])
            return tuple(op("+", op("+", d, pads[i]), pads[rank + i]) for i, d in enumerate(ins[0]))
        x = ins[0] if ins else None
        if x is None:
            return None
        if node.op == "Reshape":
            terms = self.shape_terms(node.inputs[1])
            value = g.value(node.inputs[1])
            if terms is None and value is not None:
                terms = [int(v) for v in value.reshape(-1)]
            if terms is None:
                return None
            if not attrs.get("allowzero", 0):
                terms = [x[i] if t == 0 else t for i, t in enumerate(terms)]
            return self._reshape(x, terms)
        if node.op == "Expand":
            terms = self.shape_terms(node.inputs[1])
            value = g.value(node.inputs[1])
            terms = terms if terms is not None else None if value is None else [int(v) for v in value.reshape(-1)]
            return None if terms is None else broadcast([x, tuple(self.canon(t) for t in terms)])
        if node.op == "Transpose":
            perm = attrs.get("perm") or list(range(len(x)))[::-1]
            return tuple(x[p] for p in perm)
        if node.op in ("Unsqueeze", "Squeeze"):
            axes = attrs.get("axes")
            if axes is None and len(node.inputs) > 1 and node.inputs[1]:
                value = g.value(node.inputs[1])
                axes = None if value is None else [int(a) for a in value.reshape(-1)]
            if node.op == "Squeeze":
                if axes is None:
                    return None
                drop = {a % len(x) for a in axes}
                return tuple(d for i, d in enumerate(x) if i not in drop)
            if axes is None:
                return None
            rank = len(x) + len(axes)
            put = {a % rank for a in axes}
            rest = iter(x)
            return tuple(1 if i in put else next(rest) for i in range(rank))
        if node.op in REDUCE:
            return self._reduce(node, x)
        if node.op == "Flatten":
            axis = attrs.get("axis", 1) % (len(x) + 1)
            return (_product(1, list(x[:axis])), _product(1, list(x[axis:])))
        if node.op == "Gather" and ins[1] is not None:
            axis = attrs.get("axis", 0) % len(x)
            return (*x[:axis], *ins[1], *x[axis + 1:])
        if node.op == "GatherND" and ins[1] is not None and not attrs.get("batch_dims", 0) \
                and isinstance(ins[1][-1], int):
            return (*ins[1][:-1], *x[ins[1][-1]:])
        if node.op == "GatherElements":
            return ins[1]
        if node.op == "MatMul" and ins[1] is not None and len(x) >= 2 and len(ins[1]) >= 2:
            batch = broadcast([x[:-2], ins[1][:-2]]) if len(x) > 2 or len(ins[1]) > 2 else ()
            return (*batch, x[-2], ins[1][-1])
        if node.op == "Gemm" and ins[1] is not None:
            rows = x[1] if attrs.get("transA") else x[0]
            cols = ins[1][0] if attrs.get("transB") else ins[1][1]
            return (rows, cols)
        if node.op == "Concat":
            if any(s is None for s in ins):
                return None
            axis = attrs["axis"] % len(x)
            total: Term = 0
            for s in ins:
                total = op("+", total, s[axis])
            return (*x[:axis], total, *x[axis + 1:])
        if self.windows and node.op in WINDOWED:
            return windowed_extents(node, x, ins[1] if len(ins) > 1 else None)
        if self.windows and node.op == "ConvTranspose":
            return transposed_extents(node, x, ins[1])
        if node.op == "Slice" and SLICE_TERMS in meta:
            sliced = meta[SLICE_TERMS]
            dims = list(x)
            for start, end, axis in zip(sliced["starts"], sliced["ends"], sliced["axes"]):
                start, end = self.canon(start), self.canon(end)
                if isinstance(start, int) and isinstance(end, int) and isinstance(dims[axis], int):
                    dims[axis] = len(range(dims[axis])[start:end])
                elif isinstance(start, int) and start < 0 or isinstance(end, int) and end < 0:
                    return None
                else:
                    dims[axis] = op("-", end, start)
            return tuple(dims)
        if node.op == "Slice":
            return self._constant_slice(node, x)
        return None

    def _constant_slice(self, node: Node, x: Dims) -> Dims | None:
        """A Slice by constants: the axes it cuts from known extents, or from the start to the end of an
        unknown one (an end past any extent, step 1); the others as they are (None: unknown)."""
        if "starts" in node.attrs:
            starts, ends = node.attrs["starts"], node.attrs["ends"]
            axes, steps = node.attrs.get("axes"), None
        else:
            values = [self.graph.value(i) if i else None for i in node.inputs[1:5]]
            if len(values) < 2 or any(v is None for v, i in zip(values, node.inputs[1:5]) if i):
                return None
            starts, ends = values[0].reshape(-1).tolist(), values[1].reshape(-1).tolist()
            axes = values[2].reshape(-1).tolist() if len(values) > 2 and values[2] is not None else None
            steps = values[3].reshape(-1).tolist() if len(values) > 3 and values[3] is not None else None
        axes = list(range(len(starts))) if axes is None else axes
        steps = [1] * len(starts) if steps is None else steps
        dims: list[Term | None] = list(x)
        for start, end, axis, step in zip(starts, ends, axes, steps):
            axis = int(axis) % len(x)
            if isinstance(x[axis], int):
                dims[axis] = len(range(x[axis])[slice(int(start), int(end), int(step))])
            elif step == 1 and 0 <= start and end >= 2**31 - 1:
                dims[axis] = op("-", x[axis], int(start))
            else:
                dims[axis] = None
        return tuple(dims)

    def _reduce(self, node: Node, x: Dims) -> Dims | None:
        """Reduce* (axes as attribute, or as a constant input from opset 18/13 on), keepdims or not."""
        axes = node.attrs.get("axes")
        if axes is None and len(node.inputs) > 1 and node.inputs[1]:
            value = self.graph.value(node.inputs[1])
            if value is None:
                return None
            axes = [int(a) for a in value.reshape(-1)]
        if not axes:
            if node.attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(len(x)))
        drop = {a % len(x) for a in axes}
        if node.attrs.get("keepdims", 1):
            return tuple(1 if i in drop else d for i, d in enumerate(x))
        return tuple(d for i, d in enumerate(x) if i not in drop)

    def _reshape(self, x: Dims | None, terms: list[Term]) -> Dims | None:
        terms = [self.canon(t) for t in terms]
        if -1 in terms:
            if x is None or terms.count(-1) > 1:
                return None
            rest = quotient(list(x), [t for t in terms if t != -1])
            if rest is None:
                return None
            terms[terms.index(-1)] = rest
        if any(isinstance(t, int) and t < 0 for t in terms):
            return None
        if x is not None and quotient(list(x), terms) != 1:
            return None
        return tuple(terms)


def evaluate(term: Term, sizes: dict[Ref, int]) -> int | None:
    """The number a term takes when each symbol has the size `sizes` gives it."""
    if isinstance(term, int):
        return term
    if isinstance(term, Ref):
        return sizes.get(term)
    a, b = evaluate(term.a, sizes), evaluate(term.b, sizes)
    if a is None or b is None:
        return None
    if term.name == "//":       # ONNX's integer Div and ncnn's expressions truncate toward zero
        return None if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return {"+": a + b, "-": a - b, "*": a * b, "max": max(a, b), "min": min(a, b)}[term.name]


def symbols(dims: Dims) -> set[Term]:
    """The symbols (non-numbers that are not products) a tuple of terms reads."""
    found: set[Term] = set()
    for t in dims:
        f = _factors(t)
        found.update(s for s in (f[1] if f else [t]) if not isinstance(s, int))
    return found


def numel(dims: Dims) -> Term:
    return _product(1, list(dims)) if dims else 1


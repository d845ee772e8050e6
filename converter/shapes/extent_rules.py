"""How each op's output extents follow from its inputs', as terms (converter/shapes/symbolic.py): one
short rule per op or op family, looked up by SymbolicShapes (converter/shapes/symbolic_shapes.py).

A rule takes the walk (`s`: its graph, `canon`, `shape_terms` and `windows`), the node and its inputs'
terms (None for an input whose terms are unknown) and gives the single output's terms, or None where
it cannot say. Split's pieces, several outputs, are `split_pieces`'s.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Node
from converter.op_groups import BROADCASTING, REDUCE, UNARY_ELEMENTWISE
from converter.op_table import OpTable
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Term, op
from converter.shapes.term_arithmetic import Dims, broadcast, product, quotient
from converter.shapes.window_extents import WINDOWED, transposed_extents, windowed_extents

EXTENT_RULES = OpTable("extent rule")
rule = EXTENT_RULES.register
Ins = list[Dims | None]

SAME_SHAPE = UNARY_ELEMENTWISE | {"Softmax", "LogSoftmax", "LayerNormalization", "CumSum", "Dropout",
                                  "InstanceNormalization", "BatchNormalization", "SimplifiedLayerNormalization",
                                  "RMSNormalization", "RotaryEmbed"}   # RotaryEmbed: fuse_rotary_embed's ncnn layer


@rule(*SAME_SHAPE)
def same_shape(s, node: Node, ins: Ins) -> Dims | None:
    return ins[0] if ins else None


@rule(*BROADCASTING - SAME_SHAPE)          # PRelu is both: its output has its first input's shape
def broadcasting(s, node: Node, ins: Ins) -> Dims | None:
    return broadcast(ins) if ins and all(d is not None for d in ins) else None


@rule("ConstantOfShape")
def constant_of_shape(s, node: Node, ins: Ins) -> Dims | None:
    """An expressed fill (passes/express_shapes.py): its shape's terms."""
    return reshape_to(s, None, node.meta[SHAPE_TERMS]) if SHAPE_TERMS in node.meta else None


@rule("Reshape")
def reshape(s, node: Node, ins: Ins) -> Dims | None:
    """An expressed Reshape's target terms, else the target's shape-math terms or constant values (0
    copies the input's extent unless allowzero; one -1 is what the others leave)."""
    x = ins[0]
    if SHAPE_TERMS in node.meta:
        return reshape_to(s, x, node.meta[SHAPE_TERMS])
    if x is None:
        return None
    terms = _terms_or_values(s, node.inputs[1])
    if terms is None:
        return None
    if not node.attrs.get("allowzero", 0):
        terms = [x[i] if t == 0 else t for i, t in enumerate(terms)]
    return reshape_to(s, x, terms)


@rule("Resize")
def resize(s, node: Node, ins: Ins) -> Dims | None:
    """Expressed sizes, one term per axis; with windows followed, whole scales: the extent times the scale."""
    if SHAPE_TERMS in node.meta:
        return tuple(s.canon(t) for t in node.meta[SHAPE_TERMS])
    if s.windows and len(node.inputs) > 2 and node.inputs[2] and ins[0] is not None:
        scales = s.graph.value(node.inputs[2])
        if scales is not None and scales.size == len(ins[0]) and "axes" not in node.attrs \
                and np.all(scales == np.round(scales)) and np.all(scales >= 1):
            return tuple(op("*", d, int(k)) for d, k in zip(ins[0], scales.reshape(-1)))
    return None


@rule("Pad")
def pad(s, node: Node, ins: Ins) -> Dims | None:
    """With windows followed, an expressed Pad: each extent plus its two pads."""
    x = ins[0]
    if not s.windows or SHAPE_TERMS not in node.meta or x is None or 2 * len(x) != len(node.meta[SHAPE_TERMS]):
        return None
    pads, rank = [s.canon(t) for t in node.meta[SHAPE_TERMS]], len(x)
    return tuple(op("+", op("+", d, pads[i]), pads[rank + i]) for i, d in enumerate(x))


@rule("Expand")
def expand(s, node: Node, ins: Ins) -> Dims | None:
    terms = _terms_or_values(s, node.inputs[1]) if ins[0] is not None else None
    return None if terms is None else broadcast([ins[0], tuple(s.canon(t) for t in terms)])


@rule("Transpose")
def transpose(s, node: Node, ins: Ins) -> Dims | None:
    x = ins[0]
    if x is None:
        return None
    perm = node.attrs.get("perm") or list(range(len(x)))[::-1]
    return tuple(x[p] for p in perm)


@rule("Squeeze")
def squeeze(s, node: Node, ins: Ins) -> Dims | None:
    x, axes = ins[0], _axes(s, node)
    if x is None or axes is None:
        return None
    drop = {a % len(x) for a in axes}
    return tuple(d for i, d in enumerate(x) if i not in drop)


@rule("Unsqueeze")
def unsqueeze(s, node: Node, ins: Ins) -> Dims | None:
    x, axes = ins[0], _axes(s, node)
    if x is None or axes is None:
        return None
    rank = len(x) + len(axes)
    put = {a % rank for a in axes}
    rest = iter(x)
    return tuple(1 if i in put else next(rest) for i in range(rank))


@rule(*REDUCE)
def reduce(s, node: Node, ins: Ins) -> Dims | None:
    """Reduce* (axes as attribute, or as a constant input from opset 18/13 on), keepdims or not."""
    x = ins[0]
    if x is None:
        return None
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = s.graph.value(node.inputs[1])
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


@rule("Flatten")
def flatten(s, node: Node, ins: Ins) -> Dims | None:
    x = ins[0]
    if x is None:
        return None
    axis = node.attrs.get("axis", 1) % (len(x) + 1)
    return (product(1, list(x[:axis])), product(1, list(x[axis:])))


@rule("Gather")
def gather(s, node: Node, ins: Ins) -> Dims | None:
    x = ins[0]
    if x is None or ins[1] is None:
        return None
    axis = node.attrs.get("axis", 0) % len(x)
    return (*x[:axis], *ins[1], *x[axis + 1:])


@rule("GatherND")
def gather_nd(s, node: Node, ins: Ins) -> Dims | None:
    x, indices = ins[0], ins[1]
    if x is None or indices is None or node.attrs.get("batch_dims", 0) or not isinstance(indices[-1], int):
        return None
    return (*indices[:-1], *x[indices[-1]:])


@rule("GatherElements")
def gather_elements(s, node: Node, ins: Ins) -> Dims | None:
    return ins[1] if ins[0] is not None else None


@rule("MatMul")
def matmul(s, node: Node, ins: Ins) -> Dims | None:
    x, w = ins[0], ins[1]
    if x is None or w is None or len(x) < 2 or len(w) < 2:
        return None
    batch = broadcast([x[:-2], w[:-2]]) if len(x) > 2 or len(w) > 2 else ()
    return (*batch, x[-2], w[-1])


@rule("Gemm")
def gemm(s, node: Node, ins: Ins) -> Dims | None:
    x, w = ins[0], ins[1]
    if x is None or w is None:
        return None
    rows = x[1] if node.attrs.get("transA") else x[0]
    cols = w[0] if node.attrs.get("transB") else w[1]
    return (rows, cols)


@rule("Concat")
def concat(s, node: Node, ins: Ins) -> Dims | None:
    x = ins[0]
    if x is None or any(d is None for d in ins):
        return None
    axis = node.attrs["axis"] % len(x)
    total: Term = 0
    for d in ins:
        total = op("+", total, d[axis])
    return (*x[:axis], total, *x[axis + 1:])


@rule(*WINDOWED)
def windowed(s, node: Node, ins: Ins) -> Dims | None:
    """With windows followed: Conv's and pooling's formulas (converter/shapes/window_extents.py)."""
    if not s.windows or ins[0] is None:
        return None
    return windowed_extents(node, ins[0], ins[1] if len(ins) > 1 else None)


@rule("ConvTranspose")
def conv_transpose(s, node: Node, ins: Ins) -> Dims | None:
    return transposed_extents(node, ins[0], ins[1]) if s.windows and ins[0] is not None else None


@rule("Slice")
def slice_(s, node: Node, ins: Ins) -> Dims | None:
    """An expressed Slice (run-time starts or ends: their difference), else a Slice by constants."""
    x = ins[0]
    if x is None:
        return None
    if SLICE_TERMS not in node.meta:
        return _constant_slice(s, node, x)
    sliced = node.meta[SLICE_TERMS]
    dims = list(x)
    for start, end, axis in zip(sliced["starts"], sliced["ends"], sliced["axes"]):
        start, end = s.canon(start), s.canon(end)
        if isinstance(start, int) and isinstance(end, int) and isinstance(dims[axis], int):
            dims[axis] = len(range(dims[axis])[start:end])
        elif isinstance(start, int) and start < 0 or isinstance(end, int) and end < 0:
            return None
        else:
            dims[axis] = op("-", end, start)
    return tuple(dims)


def _constant_slice(s, node: Node, x: Dims) -> Dims | None:
    """A Slice by constants: the axes it cuts from known extents, or from the start to the end of an
    unknown one (an end past any extent, step 1); the others as they are (None: unknown)."""
    if "starts" in node.attrs:
        starts, ends = node.attrs["starts"], node.attrs["ends"]
        axes, steps = node.attrs.get("axes"), None
    else:
        values = [s.graph.value(i) if i else None for i in node.inputs[1:5]]
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
        elif step == 1 and start <= -2 and end >= 2**31 - 1:      # the last -start rows (a sliding window's cache)
            # ONNX clamps the start to max(0, n - k): max(0, n - max(0, -k + n)), as torch.export writes it
            n = x[axis]
            dims[axis] = op("max", 0, op("+", n, op("*", -1, op("max", 0, op("+", int(start), n)))))
        else:
            dims[axis] = None
    return tuple(dims)


def split_pieces(s, node: Node) -> list[Dims] | None:
    """Split's pieces: the input's terms but along the axis, where each piece's own extent is
    known (constant split sizes, or known output shapes)."""
    x = s.of(node.inputs[0])
    if not x:
        return None
    axis = node.attrs.get("axis", 0) % len(x)
    pieces = []
    for o in node.outputs:
        shape = s.graph.tensors[o].shape if o else None
        if shape is None or len(shape) != len(x) or shape[axis] is None:
            return None
        pieces.append((*x[:axis], int(shape[axis]), *x[axis + 1:]))
    return pieces


def reshape_to(s, x: Dims | None, terms: list[Term]) -> Dims | None:
    """Target terms, with a -1 resolved against x's; None where they do not hold x's elements."""
    terms = [s.canon(t) for t in terms]
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


def _terms_or_values(s, name: str) -> list[Term] | None:
    """A shape input's terms: shape math's, else its constant values."""
    terms = s.shape_terms(name)
    value = s.graph.value(name)
    if terms is None and value is not None:
        terms = [int(v) for v in value.reshape(-1)]
    return terms


def _axes(s, node: Node) -> list[int] | None:
    """Squeeze's and Unsqueeze's axes: the attribute (opset < 13) or a constant input."""
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = s.graph.value(node.inputs[1])
        axes = None if value is None else [int(a) for a in value.reshape(-1)]
    return axes

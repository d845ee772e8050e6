"""Which ONNX axis of each tensor is the batch axis that ncnn drops: the one place it is decided.

A graph input of rank >= 2 whose first extent is 1 has its batch axis at 0;
other inputs and all constants have none. Ops carry it forward by the rules
below; a tensor whose batch axis is lost simply keeps every axis in ncnn.

The loader records only shapes (the user's and the graph's); passes/infer_shapes.py assigns every batch
axis from them with assign_batch_axes, each time shapes are filled in. A node made after that (a
lowering's steps, a pass's new tensors) has its outputs' axes from follow_batch_axis, the same rules.
Passes that re-lay axes out on purpose (merge_batch_into_channels, merge_wide_axes ...) set the axis
they make; tests/structure/test_batch_axis_owner.py lists them.
"""
from __future__ import annotations

from typing import Callable

from converter.ir import Graph, Node, Tensor
from converter.op_table import OpTable
from converter.op_groups import BROADCASTING, REDUCE
from converter.shapes.einsum_equation import parse_equation
from converter.shapes.symbolic import SHAPE_TERMS

Rule = Callable[[Graph, Node, Tensor], "int | None"]
RULES = OpTable("batch-axis rule")
rule = RULES.register


def _extent_one(t: Tensor, axis: int | None) -> int | None:
    if axis is None or t.shape is None or not 0 <= axis < len(t.shape):
        return None
    return axis if t.shape[axis] in (1, None) else None


def _first(graph: Graph, node: Node) -> Tensor | None:
    return graph.tensors.get(node.inputs[0]) if node.inputs and node.inputs[0] else None


def same_axis(graph: Graph, node: Node, out: Tensor) -> int | None:
    """Default: shape-preserving ops keep the axis where it was."""
    x = _first(graph, node)
    if x is None or x.batch_axis is None or x.rank != out.rank:
        return None
    return _extent_one(out, x.batch_axis)


@rule(*BROADCASTING, "MatMul", "Expand")
def broadcast(graph: Graph, node: Node, out: Tensor) -> int | None:
    """Numpy-aligned: the outermost operand batch axis that is still extent 1 in the result."""
    if out.rank is None:
        return None
    candidates = []
    for name in filter(None, node.inputs):
        t = graph.tensors[name]
        if t.batch_axis is not None and t.rank is not None:
            candidates.append(t.batch_axis + out.rank - t.rank)
    found = [a for a in candidates if _extent_one(out, a) is not None]
    return min(found) if found else None


@rule("Transpose")
def transpose(graph: Graph, node: Node, out: Tensor) -> int | None:
    x = _first(graph, node)
    if x.batch_axis is None:
        return None
    if x.rank is None:
        return None
    perm = list(node.attrs.get("perm") or reversed(range(x.rank)))
    return perm.index(x.batch_axis) if sorted(perm) == list(range(x.rank)) else None


@rule("Reshape")
def reshape(graph: Graph, node: Node, out: Tensor) -> int | None:
    """The batch axis survives a reshape only as the leading extent-1 axis. A target known only
    as run-time terms (passes/express_shapes.py) says itself whether its first extent is 1."""
    x = _first(graph, node)
    if not out.rank:
        return None
    if x.batch_axis is None and _batch_folded_back(graph, node, x, out):
        return 0
    if x.batch_axis != 0:
        return None
    terms = node.meta.get(SHAPE_TERMS)
    if terms is not None:
        return 0 if terms[0] == 1 else None
    target = graph.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    if out.shape[0] is None and target is not None and target.size and int(target.reshape(-1)[0]) == -1:
        return None     # a leading -1 that absorbs run-time sizes (flattening [1, 1, T]) is no batch
    return _extent_one(out, 0)


def _batch_folded_back(graph: Graph, node: Node, x: Tensor, out: Tensor) -> bool:
    """A computed tensor without a batch axis reshaped to a constant target that starts with a literal 1
    and has 3+ axes: the batch folded into other axes (MobileViT's [B*P, N, C] patches) is back."""
    target = graph.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    return (not x.is_constant and (out.rank or 0) >= 3 and target is not None and target.size > 0
            and int(target.reshape(-1)[0]) == 1)


@rule("Flatten")
def flatten(graph: Graph, node: Node, out: Tensor) -> int | None:
    """Flatten's first extent is the product of the input's leading axes: 1 only when all are."""
    x = _first(graph, node)
    axis = node.attrs.get("axis", 1)
    if x.batch_axis != 0 or x.shape is None or not out.rank:
        return None
    axis = axis + x.rank if axis < 0 else axis
    return 0 if all(d == 1 for d in x.shape[:axis]) else None     # axis 0: the leading 1 is new


def _axes(graph: Graph, node: Node, rank: int) -> list[int] | None:
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.value(node.inputs[1])
        axes = None if value is None else value.reshape(-1).tolist()
    if axes is None or not isinstance(axes, (list, tuple)) or not all(isinstance(a, int) for a in axes):
        return None            # malformed axes: the lowering reports them
    return sorted(a + rank if a < 0 else a for a in axes)


@rule("Squeeze")
def squeeze(graph: Graph, node: Node, out: Tensor) -> int | None:
    x = _first(graph, node)
    b = x.batch_axis
    axes = _axes(graph, node, x.rank)
    if b is None or axes is None or b in axes:
        return None
    return b - sum(a < b for a in axes)


@rule("Unsqueeze")
def unsqueeze(graph: Graph, node: Node, out: Tensor) -> int | None:
    x = _first(graph, node)
    axes = _axes(graph, node, out.rank or 0)
    if x.batch_axis is None or axes is None or out.rank is None:
        return None
    kept = [i for i in range(out.rank) if i not in axes]
    return kept[x.batch_axis] if x.batch_axis < len(kept) else None


@rule(*REDUCE, "ArgMax", "ArgMin")
def reduce(graph: Graph, node: Node, out: Tensor) -> int | None:
    x = _first(graph, node)
    b = x.batch_axis
    if b is None or x.rank is None:
        return None
    if "axis" in node.attrs or node.op.startswith("Arg"):
        axes = [node.attrs.get("axis", 0) % x.rank]
    else:
        axes = _axes(graph, node, x.rank)
        if axes is None:
            axes = [] if node.attrs.get("noop_with_empty_axes") else list(range(x.rank))
    if b in axes:
        return None
    if node.attrs.get("keepdims", 1):
        return b
    return b - sum(a < b for a in axes)


@rule("STFT", "DFT", "Col2Im")
def leading_batch(graph: Graph, node: Node, out: Tensor) -> int | None:
    """[batch, length(, 1 or 2)] -> [batch, frames, bins, 2], [batch, C*k, L] -> [batch, C, H, W]:
    the batch stays in front."""
    x = _first(graph, node)
    return 0 if x is not None and x.batch_axis == 0 and out.rank else None


@rule("Shape", "Size", "ConstantOfShape", "Range", "NonZero", "Constant")
def no_axis(graph: Graph, node: Node, out: Tensor) -> int | None:
    return None


def assign_batch_axes(graph: Graph) -> None:
    """Every tensor's batch axis from the inputs' shapes, by the op rules, in one walk (infer_shapes')."""
    for name in graph.inputs:
        t = graph.tensors[name]
        t.batch_axis = 0 if t.rank is not None and t.rank >= 2 and t.shape[0] == 1 else None
    for t in graph.tensors.values():
        if t.is_constant:
            t.batch_axis = None
    for node in graph.topological():
        for out in filter(None, node.outputs):
            tensor = graph.tensors[out]
            if tensor.is_constant:
                tensor.batch_axis = None
            else:
                follow_batch_axis(graph, node, tensor)


def follow_batch_axis(graph: Graph, node: Node, out: Tensor) -> int | None:
    """Set (and give) `out`'s batch axis from `node`'s inputs' by the op's rule: for an output of a node
    made after the graph's axes were assigned."""
    out.batch_axis = RULES.get(node.op, same_axis)(graph, node, out)
    return out.batch_axis


@rule("LSTM", "GRU", "RNN")
def recurrent(graph: Graph, node: Node, out: Tensor) -> int | None:
    """The recurrence's batch (extent 1; other batches are refused when lowering):
    Y [T, dirs, B, H] and Y_h/Y_c [dirs, B, H], or B first with layout=1."""
    if node.attrs.get("layout", 0):
        return _extent_one(out, 0)
    return _extent_one(out, 2 if node.outputs.index(out.name) == 0 else 1)


@rule("Gather")
def gather(graph: Graph, node: Node, out: Tensor) -> int | None:
    """Gather keeps the data's batch axis unless it gathers along it; the indices' axes replace the
    gathered one."""
    x = _first(graph, node)
    if x is None or not x.rank or len(node.inputs) < 2:     # (a scalar has no axis to gather along)
        return None
    indices = graph.tensors.get(node.inputs[1])
    if indices is None or indices.rank is None:
        return None
    axis = node.attrs.get("axis", 0) % x.rank
    if x.batch_axis is None:        # a table read at batched indices (an embedding): theirs
        return None if indices.batch_axis is None else _extent_one(out, axis + indices.batch_axis)
    b = x.batch_axis
    if axis == b:
        return None
    return _extent_one(out, b if b < axis else b + indices.rank - 1)    # the indices' axes replace `axis`


@rule("Einsum")
def einsum(graph: Graph, node: Node, out: Tensor) -> int | None:
    """The output axis of an operand's batch-axis letter, if that letter is kept with extent 1."""
    operands = [graph.tensors.get(i) for i in node.inputs]
    if any(t is None or t.rank is None for t in operands) or out.rank is None:
        return None
    try:
        terms, letters = parse_equation(node.attrs.get("equation", ""), [t.rank for t in operands])
    except ValueError:
        return None
    found = [letters.index(term[t.batch_axis]) for t, term in zip(operands, terms)
             if t.batch_axis is not None and term[t.batch_axis] in letters]
    found = [a for a in found if _extent_one(out, a) is not None]
    return min(found) if found else None


@rule("Concat")
def concat(graph: Graph, node: Node, out: Tensor) -> int | None:
    """A computed input's batch axis, unless joined along it (constants, such as a class token
    put before the patch tokens, have none of their own but fit any extent-1 axis)."""
    axis = node.attrs.get("axis", 0) % out.rank if out.rank else None
    for name in filter(None, node.inputs):
        t = graph.tensors[name]
        if not t.is_constant and t.batch_axis is not None and t.rank == out.rank and t.batch_axis != axis:
            return _extent_one(out, t.batch_axis)
    return None

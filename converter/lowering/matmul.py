"""ONNX MatMul -> ncnn InnerProduct (constant 2-D right side on a 1-D/2-D ncnn left side) or MatMul.

ncnn MatMul follows numpy for every rank up to 4 (vectors, leading-ones rank
alignment, batch broadcasting; checked in the real runtime). What differs is
only the dropped batch axis: an operand must be reshaped when dropping the
output's batch axis does not drop the same (extent-1) axis from it.
"""
from __future__ import annotations

from ..ir import Graph, Node, Shape, Tensor
from . import lowers
from .common import fail, layer, ncnn_pairs, reshape_layer


def _fits(actual: Shape, target: Shape) -> bool:
    """ncnn MatMul reads `actual` as `target`: equal, or a matrix missing only leading ones."""
    if len(actual) == 1 or len(target) == 1:
        return tuple(actual) == tuple(target)
    n = len(actual)
    return n <= len(target) and tuple(actual) == tuple(target[-n:]) and all(d == 1 for d in target[:-n])


def _operand(graph: Graph, node: Node, t: Tensor, target: list[tuple[int | None, int | None]],
             layers: list[Node]) -> str:
    """Tensor `t` with ncnn shape `target`: (extent, ONNX axis of t or None) per axis, numpy order."""
    shape = tuple(d for d, _ in target)
    if len(shape) > 4:
        raise fail(node, graph, f"operand '{t.name}' would need {len(shape)} ncnn axes; ncnn holds at most 4")
    if t.is_constant:
        return graph.add_constant(f"{t.name}_mm", t.value.reshape(shape)).name
    name = graph.fresh_name(f"{t.name}_mm")
    graph.add_tensor(Tensor(name, shape, t.dtype))
    pairs = {o: t.ncnn_axis(i) for o, (_, i) in enumerate(target) if i is not None}
    layers.append(reshape_layer(graph, node, t.name, name,
                                {o: a for o, a in pairs.items() if a is not None}, suffix=f"_{t.name}"))
    return name


def _aligned(t: Tensor, rank: int) -> list[tuple[int | None, int | None]]:
    """A matrix operand padded with leading ones to `rank`: (extent, own ONNX axis) pairs."""
    pad = rank - t.rank
    return [(1, None)] * pad + [(d, i) for i, d in enumerate(t.shape)]


def _all_ones(axes: list[tuple[int | None, int | None]]) -> bool:
    return all(d == 1 for d, _ in axes)


@lowers("MatMul")
def matmul(graph: Graph, node: Node) -> list[Node]:
    a, b, out = (graph.tensors[t] for t in (*node.inputs[:2], node.outputs[0]))
    for t in (a, b):
        if t.shape is None:
            raise fail(node, graph, f"the rank of '{t.name}' is unknown")
        if t.dtype.kind != "f":
            raise fail(node, graph, f"operand '{t.name}' is {t.dtype}; ncnn computes in float only")
    if out.shape is None:
        raise fail(node, graph, "the output rank is unknown")
    if b.is_constant and b.rank == 2 and len(a.ncnn_shape) in (1, 2) and len(out.ncnn_shape) == len(a.ncnn_shape):
        k, n = b.shape      # InnerProduct computes per row of a 2-D input, or the 1-D vector
        return [layer(node, graph, "InnerProduct", [a.name], [out.name], {0: n, 1: 0, 2: k * n},
                      weights=[b.value.T])]

    batch = max(a.rank, b.rank) - 2         # out = batch dims + [M if a is a matrix] + [N if b is]
    full_a = _aligned(a, batch + 2) if a.rank >= 2 else [(d, i) for i, d in enumerate(a.shape)]
    full_b = _aligned(b, batch + 2) if b.rank >= 2 else [(d, i) for i, d in enumerate(b.shape)]
    ob, layers = out.batch_axis, []
    m_axis = batch if a.rank >= 2 else None
    n_axis = batch + (a.rank >= 2) if b.rank >= 2 else None
    target, result = out.name, None
    if ob is None:
        pass
    elif ob < batch:                         # a batch dim: drop it from both
        full_a = [x for i, x in enumerate(full_a) if i != ob] if a.rank >= 2 else full_a
        full_b = [x for i, x in enumerate(full_b) if i != ob] if b.rank >= 2 else full_b
    elif ob == m_axis and _all_ones(full_a[:batch]):
        full_a = full_a[-1:]                 # a row vector: ncnn's 1-D operand
    elif ob == n_axis and _all_ones(full_b[:batch]):
        full_b = full_b[-2:-1]               # a column vector
    else:                                    # compute with the extent-1 axis, then drop it
        result = graph.fresh_name(f"{out.name}_full")
        graph.add_tensor(Tensor(result, tuple(out.shape), out.dtype))
        target = result
    operands = ((a, full_a), (b, full_b))
    fits = [_fits(t.ncnn_shape, tuple(d for d, _ in full)) for t, full in operands]
    # ncnn's result has the larger operand rank (as numpy): the longest target must be met in full
    ranks = [len(t.ncnn_shape) if ok else len(full) for (t, full), ok in zip(operands, fits)]
    longest = max(len(full_a), len(full_b))
    if max(ranks) < longest:
        fits[[len(full_a), len(full_b)].index(longest)] = False
    inputs = [t.name if ok else _operand(graph, node, t, full, layers) for (t, full), ok in zip(operands, fits)]
    layers.append(layer(node, graph, "MatMul", inputs, [target]))
    if result is not None:
        layers.append(reshape_layer(graph, node, result, out.name,
                                    ncnn_pairs(graph.tensors[result], out, {i: i for i in range(out.rank)}),
                                    suffix="_drop_batch"))
    return layers

"""Rewrite the Softmax NaN guard Where(IsNaN(p), 0, p), p = Softmax(z), into finite arithmetic.

Exporters emit the guard so that a row masked entirely with -inf gives zeros instead of
NaN. ncnn has no NaN test (and its x86 min/max are not IEEE for NaN), and its Softmax of an
all -inf row is NaN, which no later arithmetic can undo. So the guard is computed from z
before the Softmax, where no NaN exists yet (for z finite or -inf):

    zc = Max(z, -FLT_MAX)                    -inf becomes the lowest float: Softmax stays finite
    r  = ReduceMax(Max(z - zc, -1) + 1)      1 for a row with a finite entry, 0 for all -inf
    out = Softmax(zc) * r

z - zc is 0 for a finite entry and -inf for -inf. In a row with a finite entry the -inf ones
weigh exp(-inf) = 0 in onnxruntime and exp(-FLT_MAX - max) = 0 here; a row of all -inf is a
uniform row times 0. (ncnn's Reduction max of an all -inf row is -FLT_MAX, not -inf, so r is
taken over the 0/1 indicator, not over z.) z holding +inf or NaN is outside this: it makes NaN
in onnxruntime's Softmax as well. One walk over the IsNaN nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor

LOWEST = np.float32(np.finfo(np.float32).min)


def _guard(graph: Graph, isnan: Node) -> tuple[Node, Node] | None:
    """(Softmax, Where) when `isnan` is the guard Where(IsNaN(p), 0, p) of a Softmax output p."""
    p = isnan.inputs[0]
    softmax = graph.producer(p)
    readers = graph.consumers(isnan.outputs[0])
    if softmax is None or softmax.op != "Softmax" or softmax.ncnn or len(readers) != 1:
        return None
    where = readers[0]
    if where.op != "Where" or where.inputs[0] != isnan.outputs[0] or where.inputs[2] != p:
        return None
    zero = graph.value(where.inputs[1])
    if zero is None or np.any(zero):
        return None
    shape = graph.tensors[p].shape
    if shape is None or graph.tensors[where.outputs[0]].shape != shape or graph.tensors[softmax.inputs[0]].shape != shape:
        return None
    return softmax, where


def rewrite_softmax_nan_guard(graph: Graph) -> dict:
    rewritten = 0
    for isnan in [n for n in graph.topological() if n.op == "IsNaN" and not n.ncnn]:
        found = _guard(graph, isnan)
        if found is None:
            continue
        softmax, where = found
        z = graph.tensors[softmax.inputs[0]]
        axis = int(softmax.attrs["axis"]) % z.rank
        stem = where.outputs[0]

        def tensor(tag: str, shape=z.shape) -> str:
            name = graph.fresh_name(f"{stem}_{tag}")
            graph.add_tensor(Tensor(name, shape, z.dtype, batch_axis=z.batch_axis))
            return name

        def const(tag: str, value: float) -> str:
            return graph.add_constant(f"{stem}_{tag}", np.array(value, z.dtype)).name

        def node(op: str, inputs: list[str], output: str, **attrs) -> None:
            graph.add_node(Node(graph.fresh_name(f"{where.name}_{op}"), op, inputs, [output], attrs,
                                origin=where.origin or where.name))

        zc, gap, capped, finite, any_finite, q = (tensor(t) for t in ("clamped", "gap", "capped", "finite", "any",
                                                                       "softmax"))
        graph.tensors[any_finite].shape = tuple(1 if a == axis else d for a, d in enumerate(z.shape))
        graph.remove_node(where)
        node("Max", [z.name, const("lowest", LOWEST)], zc)
        node("Sub", [z.name, zc], gap)
        node("Max", [gap, const("minus_one", -1.0)], capped)
        node("Add", [capped, const("one", 1.0)], finite)
        node("ReduceMax", [finite], any_finite, axes=[axis], keepdims=1)
        node("Softmax", [zc], q, axis=axis)
        node("Mul", [q, any_finite], stem)
        if not graph.consumers(isnan.outputs[0]):
            graph.remove_node(isnan)
        if not graph.consumers(softmax.outputs[0]) and softmax.outputs[0] not in graph.outputs:
            graph.remove_node(softmax)
        rewritten += 1
    if rewritten:
        graph.remove_unused_tensors()
    return {"softmax_nan_guards": rewritten}

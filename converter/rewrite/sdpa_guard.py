"""Two forms of torch's scaled_dot_product_attention as torch.onnx's TorchScript exporter writes it
(optimum's exports, transformers' sdpa attention), read by fuse_decoder_attention:

- the scale split over both operands, q * sqrt(s) and k^T * sqrt(s) before the MatMul (`unscaled`);
- the Softmax NaN guard Where(IsNaN(p), 0, p): a row masked everywhere with -inf gives zeros, not NaN
  (`nan_guard`). ncnn's SDPA has no such guard (its Softmax of an all -inf row is NaN), so the fused
  layer reads the mask clamped to -FLT_MAX and its output is multiplied by r, 1 for a row with a
  finite mask entry and 0 for a row masked everywhere (`guarded_mask`): rows with a finite entry give
  the numbers of the unguarded form (exp(-FLT_MAX - max) is 0 as exp(-inf) is; ncnn's exp clamps
  both alike), rows masked everywhere give 0 as the guard does (p = 0, then p v = 0). The same
  arithmetic as passes/rewrite_softmax_nan_guard.py, on the mask instead of the scores (the scores
  are finite), computed once per mask for every layer reading it.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.rewrite.patterns import scale_of

LOWEST = np.float32(np.finfo(np.float32).min)


def unscaled(graph: Graph, name: str) -> tuple[str, float, list[Node]]:
    """(x, c, nodes) for name = x scaled by scalar constants (their product c), or (name, 1, [])."""
    nodes, scale = [], 1.0
    while True:
        node = graph.producer(name)
        scaled = None if node is None or node.ncnn else scale_of(graph, node)
        if scaled is None:
            return name, scale, nodes
        nodes.append(node)
        name, scale = scaled[0], scale * scaled[1]


def nan_guard(graph: Graph, probs: str) -> tuple[str, list[Node]] | None:
    """(the guarded output, [IsNaN, Where]) when `probs`' readers are exactly Where(IsNaN(probs), 0, probs)."""
    readers = graph.consumers(probs)
    isnan = next((r for r in readers if r.op == "IsNaN" and not r.ncnn), None)
    if isnan is None or len(readers) != 2 or probs in graph.outputs:
        return None
    where = next((r for r in readers if r is not isnan), None)
    after = graph.consumers(isnan.outputs[0])
    if where is None or where.op != "Where" or where.ncnn or len(after) != 1 or after[0] is not where \
            or where.inputs[0] != isnan.outputs[0] or where.inputs[2] != probs:
        return None
    zero = graph.value(where.inputs[1])
    if zero is None or zero.size != 1 or np.any(zero) or isnan.outputs[0] in graph.outputs:
        return None
    return where.outputs[0], [isnan, where]


def guarded_mask(graph: Graph, mask: str, cache: dict, origin: str) -> tuple[str, str]:
    """(the mask clamped to -FLT_MAX, r): r is 1 for a row with a finite entry, 0 for a row of -inf,
    with the mask's rank and 1 column. Made once per mask (`cache`)."""
    if mask in cache:
        return cache[mask]
    m = graph.tensors[mask]

    def tensor(tag: str, shape=m.shape) -> str:
        return graph.add_tensor(Tensor(graph.fresh_name(f"{mask}_{tag}"), shape, m.dtype, batch_axis=m.batch_axis)).name

    def node(op: str, inputs: list[str], output: str, **attrs) -> None:
        graph.add_node(Node(graph.fresh_name(f"{mask}_{op}"), op, inputs, [output], attrs, origin=origin))

    def const(tag: str, value: float) -> str:
        return graph.add_constant(f"{mask}_{tag}", np.array(value, m.dtype)).name

    clamped, gap, capped, finite = (tensor(t) for t in ("clamped", "gap", "capped", "finite"))
    rows = tensor("rows", (*m.shape[:-1], 1))
    node("Max", [mask, const("lowest", LOWEST)], clamped)
    node("Sub", [mask, clamped], gap)                     # 0 where finite, -inf where -inf
    node("Max", [gap, const("minus_one", -1.0)], capped)
    node("Add", [capped, const("one", 1.0)], finite)      # 1 where finite, 0 where -inf
    node("ReduceMax", [finite], rows, axes=[m.rank - 1], keepdims=1)
    cache[mask] = clamped, rows
    return cache[mask]

"""Products by one constant weight whose inputs do not depend on each other become one product.

    y_k = Gemm(a_k, W, c)  (or MatMul(a_k, W)),  k = 1..n,  a_k [m_k, K], no a_k computed from any y_j
 -> Y = Gemm(Concat(a_1..a_n, axis 0), W, c);  y_1..y_n = Split(Y, [m_1..m_n], axis 0)

An unrolled recurrence that fuse_recurrent_cells does not take (another activation, a cell of its
own) still multiplies every step's input by the same W_ih: the export writes one Gemm per step,
and ncnn would store W_ih once per step and run n small products. The input projections do not
depend on the recurrence, so they are one product over all steps: W written once, one Gemm. Rows
are independent in a product, so the result is the same numbers. The recurrent products (h_k is
computed from y_{k-1}) are left as they are. Float, static 2-D inputs without a batch axis, no int8 plan; W of
at least SMALLEST bytes. One walk to group; per group with two or more members, one walk over what
its products feed (the members that read none of it are taken).
"""
from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np

from converter.ir import Graph, Node, Tensor

SMALLEST = 4096          # bytes: a tiny weight is no size problem and its products are cheap


def _digest(value: np.ndarray | None) -> bytes | None:
    if value is None:
        return b""
    return hashlib.blake2b(np.ascontiguousarray(value).tobytes() + str(value.shape).encode(), digest_size=16).digest()


def _key(graph: Graph, node: Node) -> tuple | None:
    """What two products must share to be one: op, attributes, W's and C's bytes; None if not a candidate."""
    if node.ncnn or node.op not in ("Gemm", "MatMul") or len(node.inputs) < 2 or len(node.outputs) != 1:
        return None
    if node.name in graph.int8_plans:       # apply_int8 finds its planned products by name
        return None
    a, w = graph.tensors[node.inputs[0]], graph.value(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype != np.float32 or w.nbytes < SMALLEST:
        return None
    if a.value is not None or a.shape is None or a.rank != 2 or None in a.shape or a.batch_axis is not None:
        return None
    if a.dtype != np.float32 or node.attrs.get("transA", 0):
        return None
    c = graph.value(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if len(node.inputs) > 2 and node.inputs[2] and (c is None or c.ndim == 2 and c.shape[0] != 1):
        return None            # a C that varies by row would have to be stacked too
    attrs = tuple(sorted((k, str(v)) for k, v in node.attrs.items()))
    return node.op, attrs, _digest(w), _digest(c)


def _independent(graph: Graph, members: list[Node]) -> list[Node]:
    """The members whose input is computed from no member's output."""
    reached: set[str] = set()
    todo = [m.outputs[0] for m in members]
    while todo:
        tensor = todo.pop()
        if tensor in reached:
            continue
        reached.add(tensor)
        for reader in graph.consumers(tensor):
            todo.extend(o for o in reader.outputs if o and o not in reached)
    return [m for m in members if m.inputs[0] not in reached]


def _hoist(graph: Graph, members: list[Node]) -> None:
    first = members[0]
    origin = first.origin or first.name
    rows = [graph.tensors[m.inputs[0]].shape[0] for m in members]
    k = graph.tensors[first.inputs[0]].shape[1]
    n = graph.tensors[first.outputs[0]].shape[1]
    stacked = graph.fresh_name(f"{origin}_stacked_inputs")
    graph.add_tensor(Tensor(stacked, (sum(rows), k)))
    product = graph.fresh_name(f"{origin}_all_rows")
    graph.add_tensor(Tensor(product, (sum(rows), n)))
    sizes = graph.add_constant(f"{origin}_row_counts", np.array(rows, np.int64)).name
    inputs = [m.inputs[0] for m in members]
    outputs = [m.outputs[0] for m in members]
    for m in members:
        graph.remove_node(m)
    graph.add_node(Node(graph.fresh_name(f"{origin}_stack"), "Concat", inputs, [stacked], {"axis": 0}, origin=origin))
    graph.add_node(Node(graph.fresh_name(f"{origin}_hoisted"), first.op, [stacked, *first.inputs[1:]], [product],
                        dict(first.attrs), origin=origin))
    split = (Node(graph.fresh_name(f"{origin}_rows"), "Split", [product, sizes], outputs, {"axis": 0}, origin=origin)
             if graph.opset >= 13 else
             Node(graph.fresh_name(f"{origin}_rows"), "Split", [product], outputs, {"axis": 0, "split": rows},
                  origin=origin))
    graph.add_node(split)


def hoist_shared_projections(graph: Graph) -> dict:
    groups: dict[tuple, list[Node]] = defaultdict(list)
    for node in graph.topological():
        key = _key(graph, node)
        if key is not None:
            groups[key].append(node)
    hoisted = 0
    for members in groups.values():
        if len(members) < 2:
            continue
        taken = _independent(graph, members)
        if len(taken) >= 2:
            _hoist(graph, taken)
            hoisted += len(taken)
    if hoisted:
        graph.remove_unused_tensors()
    return {"projections_hoisted": hoisted}

"""Where(c, -inf, x): masked_fill with an infinite value (causal and padding masks before Softmax).

logic.py computes Where as c*a + (1-c)*b, which turns 0 * inf into NaN. With one branch a
constant +-inf, the result is instead the finite branch plus an "inf where selected, 0
elsewhere" term, and that term is built without ever multiplying inf by 0:

    s = (c * 1e38) * 1e38        -> 0 where c is 0; 1e76 overflows to inf where c is 1

(signs flipped for -inf, c replaced by 1 - c when the inf is the else branch). x + s is x
where s is 0 and -inf where s is -inf, for every finite x: exact. The real runtime's log(0)
is NaN in its SIMD lanes (measured), so the x + log(m) form is not. A constant condition
gives the term as a constant.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS

from ..ir import Graph, Node
from .common import fail, layer, new_tensor
from .elementwise import binary

OVERFLOW = 1e38     # a float32 whose square is beyond the largest float32


def uniform_inf(graph: Graph, name: str) -> float | None:
    """+inf or -inf when the tensor is a constant holding that value everywhere."""
    value = graph.value(name)
    if value is None or value.dtype.kind != "f" or value.size == 0:
        return None
    first = float(value.reshape(-1)[0])
    return first if np.isinf(first) and np.all(value == first) else None


def _scalar(graph: Graph, src: Node, x: str, op: str, b: float, out: str | None, tag: str) -> tuple[Node, str]:
    t = graph.tensors[x]
    out = out or new_tensor(graph, f"{src.outputs[0]}_{tag}", t.shape, t.batch_axis)
    return layer(src, graph, "BinaryOp", [x], [out], {0: BINARY_OPS[op], 1: 1, 2: float(b)}, suffix=f"_{tag}"), out


def _inf_term(graph: Graph, node: Node, c: str, inf: float, where_true: bool, out: str | None) -> tuple[list[Node], str]:
    """inf where c selects the inf branch, 0 elsewhere, in c's shape."""
    value = graph.value(c)
    if value is not None:
        selected = value.astype(bool) if where_true else ~value.astype(bool)
        term = graph.add_constant(f"{node.outputs[0]}_inf", np.where(selected, np.float32(inf), np.float32(0)))
        return [], term.name
    # where_true: c * (+-1e38); else (c - 1) * (-+1e38), which is +-1e38 where c is 0
    first, scale = (c, np.copysign(OVERFLOW, inf)) if where_true else (None, -np.copysign(OVERFLOW, inf))
    layers = []
    if first is None:
        shifted, first = _scalar(graph, node, c, "sub", 1.0, None, "unselected")
        layers.append(shifted)
    big, b = _scalar(graph, node, first, "mul", scale, None, "big")
    inf_layer, term = _scalar(graph, node, b, "mul", OVERFLOW, out, "overflow")
    return layers + [big, inf_layer], term


def masked_fill(graph: Graph, node: Node, finite_where) -> list[Node] | None:
    """Where with one branch a constant +-inf; None when neither branch is. `finite_where`
    lowers the Where of the finite branch against 0 (logic.where)."""
    c, a, b = node.inputs[:3]
    inf_a, inf_b = uniform_inf(graph, a), uniform_inf(graph, b)
    if inf_a is None and inf_b is None:
        return None
    if inf_a is not None and inf_b is not None:
        raise fail(node, graph, "both branches are infinite; the 0/1 arithmetic ncnn computes Where with "
                                "cannot select between infinities")
    out = graph.tensors[node.outputs[0]]
    inf, where_true = (inf_a, True) if inf_a is not None else (inf_b, False)
    finite_value = graph.value(b if where_true else a)
    if graph.tensors[c].shape == out.shape and finite_value is not None and not np.any(finite_value):
        return _inf_term(graph, node, c, inf, where_true, out.name)[0]    # the mask itself: 0 or inf
    zero = graph.add_constant(f"{out.name}_zero", np.zeros((), np.float32)).name
    finite = new_tensor(graph, f"{out.name}_finite", out.shape, out.batch_axis)
    inputs = [c, zero, b] if where_true else [c, a, zero]
    layers = finite_where(graph, Node(f"{node.name}_finite", "Where", inputs, [finite], origin=node.origin or node.name))
    inf_layers, term = _inf_term(graph, node, c, inf, where_true, None)
    return layers + inf_layers + [binary(graph, node, finite, term, BINARY_OPS["add"], out.name, suffix="_fill")]

"""A run-time size used as a value: offset, offset + 1, ..., offset + n - 1 with offset a term.

A decoder step's relative positions (T5: key position minus query position, the query at the past
length) are a range whose offset is a run-time size. ncnn has no Shape layer, but a fill of ones sized
by a term (lowering/fill.py: MemoryData + Interp) summed is that term as a one-element blob, and its
running sum (CumulativeSum) counts 1..n. So the range becomes ONNX nodes over those:

    counts(n) + (c - 1) + sum(ones(p_1)) + ... - sum(ones(q_1)) - ...

for offset = c + p_1 + ... - q_1 - ..., each p, q an extent term (never negative). Float32 sums of
ones are exact below 2**24, as every run-time range in this project (runtime_fill.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.symbolic import SHAPE_TERMS, Op, Term, known_value, pin_refs


def linear_parts(term: Term, sign: int = 1) -> tuple[int, list[tuple[int, Term]]] | None:
    """(constant, [(sign, extent term), ...]) of a sum and difference of terms; a product or quotient
    is one extent term (non-negative, as sizes are)."""
    if isinstance(term, int):
        return sign * term, []
    if isinstance(term, Op) and term.name in ("+", "-"):
        a, b = linear_parts(term.a, sign), linear_parts(term.b, sign if term.name == "+" else -sign)
        return None if a is None or b is None else (a[0] + b[0], a[1] + b[1])
    if isinstance(term, Op) and term.name not in ("*", "//"):
        return None
    return 0, [(sign, term)]


def _add(graph: Graph, src: Node, kind: str, inputs: list[str], shape: tuple, out: str | None = None,
         attrs: dict | None = None, dtype=np.float32, meta: dict | None = None) -> str:
    if out is None:
        out = graph.add_tensor(Tensor(graph.fresh_name(f"{src.name}_{kind.lower()}"), shape, np.dtype(dtype))).name
    node = graph.add_node(Node(graph.fresh_name(f"{src.name}_{kind.lower()}"), kind, inputs, [out],
                               attrs=dict(attrs or {}), origin=src.origin or src.name, meta=dict(meta or {})))
    if kind == "ConstantOfShape":
        pin_refs(graph, node, node.meta[SHAPE_TERMS])
    return out


def _ones(graph: Graph, src: Node, size: Term) -> str:
    return _add(graph, src, "ConstantOfShape", [], (known_value(size),),
                meta={SHAPE_TERMS: [size], FILL_VALUE: 1.0})


def express_range_values(graph: Graph, src: Node, n: Term, offset: Term) -> bool:
    """Replace `src`, whose one output holds offset + arange(n) laid along one axis, by that range
    computed from fills; False (nothing changed) when the offset is not a sum of extents."""
    parts = linear_parts(offset)
    out = graph.tensors[src.outputs[0]]
    if parts is None or out.shape is None or sum(d != 1 for d in out.shape) > 1:
        return False
    const, sizes = parts
    graph.remove_node(src)
    axis = graph.add_constant(f"{out.name}_axis", np.array(0, np.int64)).name
    current = _add(graph, src, "CumSum", [_ones(graph, src, n), axis], (known_value(n),))       # 1 .. n
    for sign, size in sizes:
        total = _add(graph, src, "ReduceSum", [_ones(graph, src, size), axis], (1,), attrs={"keepdims": 1})
        current = _add(graph, src, "Add" if sign > 0 else "Sub", [current, total], (known_value(n),))
    if const - 1:
        shift = graph.add_constant(f"{out.name}_shift", np.array(const - 1, np.float32)).name
        current = _add(graph, src, "Add", [current, shift], (known_value(n),))
    shape = graph.add_constant(f"{out.name}_shape", np.array([1 if d == 1 else -1 for d in out.shape], np.int64))
    _add(graph, src, "Reshape", [current, shape.name], out.shape, out=out.name)
    return True

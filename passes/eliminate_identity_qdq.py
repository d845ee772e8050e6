"""Skip a QuantizeLinear/DequantizeLinear pair that gives back exactly the values it gets.

quantize_static puts a Q/DQ pair on the output of every op, also on ops that only move or pick
values (Reshape, Concat, MaxPool, Relu, nearest Resize, a Clip to bounds on the lattice...) and
then uses their input's scale.
A tensor whose values are all DequantizeLinear(q) = (q - z) * s, or such values moved, picked or
set to 0 by those ops, is on the lattice (s, z); quantizing it with the same (s, z) and type
gives q back (x / s is within a few ulps of a whole number), so the pair returns its input bit
for bit. Its readers read the tensor before the pair instead, which saves the four float layers
the pair costs when emulated. An int8 layer plan_int8 made absorbs the pair and keeps reading it.
One topological walk; runs after plan_int8, on the ONNX graph.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node

from .plan_int8 import Int8Plan

# ops whose outputs hold only values of their data inputs (or 0, which every lattice holds)
MOVING = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Slice", "Split",
          "MaxPool", "Relu", "Concat", "Resize"}
RANGES = {"|i1": (-128, 127), "|u1": (0, 255), "<i2": (-32768, 32767), "<u2": (0, 65535)}


def _lattice_of_dq(graph: Graph, node: Node) -> tuple | None:
    """(scale, zero point, type) of a per-tensor DequantizeLinear or QuantizeLinear, else None."""
    scale = graph.value(node.inputs[1])
    zero = graph.value(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if scale is None or scale.size != 1 or (zero is None and len(node.inputs) > 2 and node.inputs[2]):
        return None
    if zero is None:
        zero = np.zeros((), np.uint8)            # the ONNX default zero point and type
    if zero.size != 1 or node.attrs.get("output_dtype", 0) or node.attrs.get("block_size", 0):
        return None
    return float(np.float32(scale.ravel()[0])), int(zero.ravel()[0]), zero.dtype.str


def _data_inputs(node: Node) -> list[str]:
    return [i for i in node.inputs if i] if node.op == "Concat" else node.inputs[:1]


def _on_lattice(bound, kind: tuple, upper: bool) -> bool:
    """A clip bound that leaves the lattice's values on it: a lattice value, or beyond its range."""
    if bound is None:
        return True
    scale, zero, dtype = kind
    if dtype not in RANGES:
        return False
    b, s, (qmin, qmax) = np.float32(np.asarray(bound).ravel()[0]), np.float32(scale), RANGES[dtype]
    beyond = b >= np.float32(qmax - zero) * s if upper else b <= np.float32(qmin - zero) * s
    k = int(np.clip(np.round(np.float64(b) / np.float64(s)), qmin - zero, qmax - zero))
    return bool(beyond or np.float32(k) * s == b)


def _clip_bounds(graph: Graph, node: Node) -> tuple | None:
    """(min, max) of a Clip, None for an absent one; None in all when a bound is computed at run time."""
    if len(node.inputs) == 1 and ("min" in node.attrs or "max" in node.attrs):      # opset < 11
        return node.attrs.get("min"), node.attrs.get("max")
    names = (node.inputs + ["", ""])[1:3]
    values = [graph.value(n) if n else None for n in names]
    if any(n and v is None for n, v in zip(names, values)):
        return None
    return tuple(values)


def _moves_values(graph: Graph, node: Node, kind: tuple | None) -> bool:
    if node.op == "Clip":
        bounds = _clip_bounds(graph, node) if kind is not None else None
        return bounds is not None and _on_lattice(bounds[0], kind, False) and _on_lattice(bounds[1], kind, True)
    if node.op == "Resize":        # tf_crop_and_resize writes extrapolation_value outside the input
        return node.attrs.get("mode", "nearest") == "nearest" and \
            node.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize"
    if node.op == "MaxPool":
        return len(node.outputs) == 1 or not node.outputs[1]
    return node.op in MOVING


def eliminate_identity_qdq(graph: Graph) -> dict:
    if not any(n.op == "QuantizeLinear" for n in graph):
        return {}
    lattice: dict[str, tuple] = {}
    bypassed = 0
    for node in graph.topological():
        if node.op == "DequantizeLinear":
            on = _lattice_of_dq(graph, node)
            if on is not None:
                lattice[node.outputs[0]] = on
            source = graph.producer(node.inputs[0])
            if source is not None and source.op == "QuantizeLinear" and on is not None \
                    and lattice.get(source.inputs[0]) == on == _lattice_of_dq(graph, source):
                bypassed += _bypass(graph, node, source.inputs[0], _before_pair(graph, source.inputs[0], on))
        else:
            kinds = {lattice.get(i) for i in _data_inputs(node)}
            kind = kinds.pop() if len(kinds) == 1 else None
            if kind is not None and _moves_values(graph, node, kind):
                lattice.update((o, kind) for o in node.outputs if o)
    if bypassed:
        graph.remove_unused_tensors()
    return {"identity_qdq_bypassed": bypassed}


def _before_pair(graph: Graph, name: str, on: tuple) -> str | None:
    """x when `name` is DQ(Q(x)) on the lattice `on`, else None."""
    dq = graph.producer(name)
    q = graph.producer(dq.inputs[0]) if dq is not None and dq.op == "DequantizeLinear" else None
    if q is None or q.op != "QuantizeLinear" or _lattice_of_dq(graph, q) != on or _lattice_of_dq(graph, dq) != on:
        return None
    return q.inputs[0]


def _bypass(graph: Graph, dq: Node, source: str, before: str | None) -> int:
    """Point the readers of `dq` at `source`, except the int8 layers planned to absorb the pair:
    those quantize `before` themselves where `source` is that same pair applied to it (repeating
    it changes nothing), so that pair runs no float layers for them either."""
    out, moved = dq.outputs[0], 0
    for reader in {n.name: n for n in graph.consumers(out)}.values():
        plan = graph.int8_plans.get(reader.name)
        if isinstance(plan, Int8Plan) and plan.dq_out == out:
            if before is not None and plan.x != before:
                plan.x = before
                moved += 1
            continue
        for slot in [k for k, i in enumerate(reader.inputs) if i == out]:
            graph.replace_input(reader, slot, source)
            moved += 1
    return 1 if moved else 0

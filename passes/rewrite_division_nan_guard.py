"""Rewrite a NaN guard over a division, Where(IsNaN(r), c, r), into a test of the operands.

torch.export's atan2 (onnxscript) computes atan(y / x), moves it by +-pi where x < 0, and guards
the result: Where(IsNaN(r), 0, r). ncnn has no NaN test (lowering/isnan.py). When r comes from
d = Div(y, x) only through Atan (finite for every d but NaN), Add/Sub of finite constants and
the value branches of Where, r is NaN exactly where d is, which for finite y and x means
y == 0 and x == 0. ncnn's BinaryOp div by 0 gives NaN for any y (measured), so the division
is made finite too; with z = And(Equal(y, 0), Equal(x, 0)) and e = Cast(Equal(x, 0)):

    IsNaN(r)  becomes  z
    Div(y, x) becomes  Div(y, x + e) + e * y * FLT_MAX * FLT_MAX

which is y / x where x != 0, 0 at 0 / 0 (r stays finite; the guard Where selects as before),
and +-inf or beyond 1e31 at y / 0, where atan gives +-pi/2 as it does for +-inf. The value of
d changes only where Atan cannot tell, so the rewrite is allowed only when nothing outside the
chain reads d or what is computed from it. One walk over the IsNaN nodes.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import Graph, Node, Tensor

FLT_MAX = np.finfo(np.float32).max
PASS_THROUGH = {"Add", "Sub"}       # with a finite constant on the other side


def _finite_constant(graph: Graph, name: str) -> bool:
    value = graph.value(name)
    return value is not None and value.dtype.kind == "f" and bool(np.all(np.isfinite(value)))


def _chain(graph: Graph, r: str) -> tuple[Node, set[str]] | None:
    """(the Div, the names of the chain's nodes) when r's only NaN source is one Div (see above)."""
    chain, divs, stack = {}, set(), [r]
    while stack:
        tensor = stack.pop()
        node = graph.producer(tensor)
        if node is None or node.ncnn:
            return None
        if node.name in chain:
            continue
        chain[node.name] = node
        if node.op == "Atan":
            div = graph.producer(node.inputs[0])
            if div is None or div.op != "Div" or div.ncnn:
                return None
            divs.add(div.name)
        elif node.op == "Where":
            stack += [t for t in node.inputs[1:] if not _finite_constant(graph, t)]
        elif node.op in PASS_THROUGH:
            variable = [t for t in node.inputs if not _finite_constant(graph, t)]
            if len(variable) != 1:
                return None
            stack += variable
        else:
            return None
    if len(divs) != 1:
        return None
    div = graph.nodes[divs.pop()]
    return div, set(chain) | {div.name}


def _private(graph: Graph, nodes: set[str], r: str, readers: set[str]) -> bool:
    """Nothing but the chain (and, for r, the guard's readers) sees the chain's values."""
    for name in nodes:
        for out in graph.nodes[name].outputs:
            allowed = nodes | readers if out == r else nodes
            if out in graph.outputs or any(c.name not in allowed for c in graph.consumers(out)):
                return False
    return True


def rewrite_division_nan_guard(graph: Graph) -> dict:
    rewritten = 0
    for isnan in [n for n in graph.topological() if n.op == "IsNaN" and not n.ncnn]:
        r = isnan.inputs[0]
        guards = graph.consumers(isnan.outputs[0])
        if not guards or any(w.op != "Where" or w.inputs[0] != isnan.outputs[0] or w.inputs[2] != r
                             or not _finite_constant(graph, w.inputs[1]) for w in guards):
            continue
        found = _chain(graph, r)
        if found is None or not _private(graph, found[1], r, {isnan.name} | {w.name for w in guards}):
            continue
        div = found[0]
        y, x = div.inputs
        out = graph.tensors[div.outputs[0]]
        if out.shape is None or graph.tensors[y].shape is None or graph.tensors[x].shape is None:
            continue
        stem = isnan.outputs[0]

        def tensor(tag: str, dtype, shape, batch_axis) -> str:
            name = graph.fresh_name(f"{stem}_{tag}")
            graph.add_tensor(Tensor(name, shape, np.dtype(dtype), batch_axis=batch_axis))
            return name

        def node(op: str, inputs: list[str], output: str, **attrs) -> None:
            graph.add_node(Node(graph.fresh_name(f"{isnan.name}_{op}"), op, inputs, [output], attrs,
                                origin=isnan.origin or isnan.name))

        zero = graph.add_constant(f"{stem}_zero", np.array(0, graph.tensors[x].dtype)).name
        big = graph.add_constant(f"{stem}_flt_max", np.array(FLT_MAX, out.dtype)).name
        y_zero = tensor("y_zero", bool, graph.tensors[y].shape, graph.tensors[y].batch_axis)
        x_zero = tensor("x_zero", bool, graph.tensors[x].shape, graph.tensors[x].batch_axis)
        x_ind = tensor("x_zero_float", out.dtype, graph.tensors[x].shape, graph.tensors[x].batch_axis)
        safe = tensor("safe_x", out.dtype, graph.tensors[x].shape, graph.tensors[x].batch_axis)
        quotient, y_at_zero, scaled, huge = (tensor(t, out.dtype, out.shape, out.batch_axis)
                                             for t in ("quotient", "y_at_zero", "scaled", "huge"))
        graph.remove_node(isnan)
        graph.remove_node(div)
        node("Equal", [y, zero], y_zero)
        node("Equal", [x, zero], x_zero)
        node("And", [y_zero, x_zero], stem)
        graph.tensors[stem].dtype = np.dtype(bool)
        node("Cast", [x_zero], x_ind, to=1)
        node("Add", [x, x_ind], safe)
        graph.add_node(replace(div, inputs=[y, safe], outputs=[quotient]))
        node("Mul", [x_ind, y], y_at_zero)
        node("Mul", [y_at_zero, big], scaled)        # in two steps: any normal y becomes +-inf or so large
        node("Mul", [scaled, big], huge)             # that atan gives +-pi/2 exactly
        node("Add", [quotient, huge], div.outputs[0])
        rewritten += 1
    return {"division_nan_guards": rewritten}

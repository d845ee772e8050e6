"""Ops ncnn has no layer for, rewritten as ONNX ops that lower exactly, before lowering.

    LogSoftmax(x, axis) = (x - max) - log(sum(exp(x - max)))   (no -inf where softmax underflows)
    Softsign(x)         = x / (1 + |x|)

Each rewrite is a function returning the replacement nodes; the new tensors get the
shapes and batch axis they have in ONNX. One walk over the graph.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor


def _tensor(graph: Graph, stem: str, like: Tensor, shape=None) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, like.shape if shape is None else shape, like.dtype, batch_axis=like.batch_axis))
    return name


def _const(graph: Graph, stem: str, value) -> str:
    return graph.add_constant(stem, np.asarray(value)).name


def _log_softmax(graph: Graph, node: Node) -> list[Node] | None:
    x = graph.tensors[node.inputs[0]]
    if x.rank is None or graph.opset < 13:         # opset < 13 flattens from the axis: leave it to lowering
        return None
    axis = node.attrs.get("axis", -1) % x.rank
    keep = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    batch = x.batch_axis if x.batch_axis != axis else None
    axes = _const(graph, f"{node.name}_axes", np.array([axis], np.int64))
    m = _tensor(graph, f"{node.name}_max", x, keep)
    shifted = _tensor(graph, f"{node.name}_shifted", x)
    e = _tensor(graph, f"{node.name}_exp", x)
    s = _tensor(graph, f"{node.name}_sum", x, keep)
    log_s = _tensor(graph, f"{node.name}_logsum", x, keep)
    for t in (m, s, log_s):
        graph.tensors[t].batch_axis = batch
    n = node.name
    return [Node(f"{n}_max", "ReduceMax", [x.name], [m], {"axes": [axis], "keepdims": 1}, origin=n),
            Node(f"{n}_sub", "Sub", [x.name, m], [shifted], origin=n),
            Node(f"{n}_exp", "Exp", [shifted], [e], origin=n),
            Node(f"{n}_sum", "ReduceSum", [e, axes], [s], {"keepdims": 1}, origin=n),
            Node(f"{n}_log", "Log", [s], [log_s], origin=n),
            Node(f"{n}_out", "Sub", [shifted, log_s], list(node.outputs), origin=n)]


def _softsign(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    a = _tensor(graph, f"{node.name}_abs", x)
    d = _tensor(graph, f"{node.name}_den", x)
    one = _const(graph, f"{node.name}_one", np.array(1.0, np.float32))
    n = node.name
    return [Node(f"{n}_abs", "Abs", [x.name], [a], origin=n),
            Node(f"{n}_add", "Add", [a, one], [d], origin=n),
            Node(f"{n}_div", "Div", [x.name, d], list(node.outputs), origin=n)]


REWRITES = {"LogSoftmax": _log_softmax, "Softsign": _softsign}


def decompose_ops(graph: Graph) -> dict:
    done = 0
    for node in [n for n in graph.topological() if n.op in REWRITES and not n.ncnn]:
        replacement = REWRITES[node.op](graph, node)
        if replacement is None:
            continue
        graph.remove_node(node)
        for new in replacement:
            if new.name in graph.nodes:
                new.name = graph.fresh_name(new.name)
            graph.add_node(new)
        done += 1
    return {"decomposed": done}

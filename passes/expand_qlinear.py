"""QOperator nodes (QLinearConv, QLinearMatMul) -> DequantizeLinear, the float op, QuantizeLinear.

Their meaning is exactly that chain, except that onnxruntime requantizes the int32 sum as
round(sum * x_scale * w_scale / y_scale) where the chain rounds the float result divided by
y_scale: the two differ only for sums next to a .5 step. After this rewrite, consecutive
QOperator nodes meet as Q/DQ pairs, so passes/plan_int8.py makes the Conv/MatMul int8 where ncnn
can. The int32 bias of QLinearConv is x_scale * w_scale per channel: it becomes a float bias.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor

# op -> (float op, input slots of (value, scale, zero point) triples, output scale/zero slots)
EXPANDED = {"QLinearConv": ("Conv", [(0, 1, 2), (3, 4, 5)], (6, 7)),
            "QLinearMatMul": ("MatMul", [(0, 1, 2), (3, 4, 5)], (6, 7))}


def _float_like(graph: Graph, name: str, stem: str) -> str:
    t = graph.tensors[name]
    return graph.add_tensor(Tensor(graph.fresh_name(stem), t.shape, np.dtype(np.float32),
                                   batch_axis=t.batch_axis)).name


def _bias(graph: Graph, node: Node) -> list[str]:
    """QLinearConv's int32 bias as float: B * x_scale * w_scale (per output channel)."""
    if len(node.inputs) < 9 or not node.inputs[8]:
        return []
    b, xs, ws = (graph.value(node.inputs[k]) for k in (8, 1, 4))
    if b is None or xs is None or ws is None:
        return [""]          # left for the Conv lowering to refuse (a run-time bias)
    value = (b.astype(np.float64) * (xs.astype(np.float32) * ws.astype(np.float32)).astype(np.float64))
    return [graph.add_constant(f"{node.name}_bias", value.astype(np.float32)).name]


def expand_node(graph: Graph, node: Node) -> None:
    float_op, triples, (ys, yz) = EXPANDED[node.op]
    inputs = []
    for k, (v, s, z) in enumerate(triples):
        out = _float_like(graph, node.inputs[v], f"{node.name}_in{k}")
        attrs = {"axis": 0} if k == 1 and float_op == "Conv" else {}
        graph.add_node(Node(graph.fresh_name(f"{node.name}_dq{k}"), "DequantizeLinear",
                            [node.inputs[v], node.inputs[s], node.inputs[z]], [out], attrs))
        inputs.append(out)
    inputs += [i for i in _bias(graph, node) if i]
    result = _float_like(graph, node.outputs[0], f"{node.name}_float")
    attrs = dict(node.attrs) if float_op == "Conv" else {}
    graph.remove_node(node)
    graph.add_node(Node(node.name, float_op, inputs, [result], attrs))
    graph.add_node(Node(graph.fresh_name(f"{node.name}_q"), "QuantizeLinear",
                        [result, node.inputs[ys], node.inputs[yz]], [node.outputs[0]]))


def expand_qlinear(graph: Graph) -> dict:
    nodes = [n for n in graph.topological() if n.op in EXPANDED]
    for node in nodes:
        expand_node(graph, node)
    return {"qlinear_expanded": len(nodes)} if nodes else {}

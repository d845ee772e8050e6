"""QOperator nodes (QLinearConv, QLinearMatMul, com.microsoft's QLinearAdd, QGemm, ...) ->
DequantizeLinear, the float op, QuantizeLinear (converter/onnx_side/qoperator_ops.py says which inputs and
attributes go where).

Their meaning is exactly that chain, except that onnxruntime requantizes integer sums as
round(sum * x_scale * w_scale / y_scale) (or looks values up in a table built the same way) where
the chain rounds the float result divided by y_scale: the two differ only for values next to a .5
step. After this rewrite, consecutive QOperator nodes meet as Q/DQ pairs, so passes/plan_int8.py
makes the Conv/MatMul/Gemm int8 where ncnn can. An int32 bias (QLinearConv's B, QGemm's C) is
quantized with x_scale * w_scale (per channel; times alpha for QGemm): it becomes a float bias.
"""
from __future__ import annotations

import numpy as np

from converter.ir import ConversionError, Graph, Node, Tensor
from converter.onnx_side.defaults import fill_defaults
from converter.onnx_side.qoperator_ops import EXPANSIONS, Expansion, expansion


def _float_like(graph: Graph, name: str, stem: str) -> str:
    t = graph.tensors[name]
    return graph.add_tensor(Tensor(graph.fresh_name(stem), t.shape, np.dtype(np.float32),
                                   batch_axis=t.batch_axis)).name


def _bias(graph: Graph, node: Node, plan: Expansion) -> list[str]:
    """The int32 bias as float: B * x_scale * w_scale (per output channel) * factor."""
    if plan.bias is None:
        return []
    (_, xs, _), (_, ws, _) = plan.triples[:2]
    b, xs, ws = graph.value(plan.bias[0]), graph.value(xs), graph.value(ws)
    if b is None or xs is None or ws is None:
        return [""]          # left for the float op's lowering to refuse (a run-time bias)
    scale = (xs.astype(np.float32) * ws.astype(np.float32)).astype(np.float64) * plan.bias[1]
    value = b.astype(np.float64) * scale.reshape(-1)
    return [graph.add_constant(f"{node.name}_bias", value.astype(np.float32)).name]


def _zero_point(graph: Graph, node: Node, zero: str) -> str:
    """An absent output zero point is 0 of the node's quantized type (its first input's)."""
    if zero:
        return zero
    dtype = graph.tensors[node.inputs[0] if node.op != "QLinearConcat" else node.inputs[2]].dtype
    return graph.add_constant(f"{node.name}_zero", np.zeros((), dtype)).name


def expand_node(graph: Graph, node: Node) -> None:
    try:
        plan = expansion(node.op, node.inputs, node.attrs)
    except ValueError as exc:
        raise ConversionError(f"{node.describe()}: {exc}") from None
    inputs = []
    for k, (v, s, z) in enumerate(plan.triples):
        out = _float_like(graph, v, f"{node.name}_in{k}")
        attrs = {"axis": plan.weight_axis} if k == 1 and plan.weight_axis is not None else {}
        graph.add_node(Node(graph.fresh_name(f"{node.name}_dq{k}"), "DequantizeLinear",
                            [v, s, z] if z else [v, s], [out], attrs))
        inputs.append(out)
    inputs += [i for i in _bias(graph, node, plan) if i]
    result = _float_like(graph, node.outputs[0], f"{node.name}_float") if plan.output else node.outputs[0]
    if plan.output is None:
        graph.tensors[result].dtype = np.dtype(np.float32)
    zero = _zero_point(graph, node, plan.output[1]) if plan.output else ""
    graph.remove_node(node)
    graph.add_node(fill_defaults(Node(node.name, plan.float_op, inputs, [result], dict(plan.attrs)), graph.opset))
    if plan.output:
        graph.add_node(Node(graph.fresh_name(f"{node.name}_q"), "QuantizeLinear",
                            [result, plan.output[0], zero], [node.outputs[0]]))


def expand_qlinear(graph: Graph) -> dict:
    nodes = [n for n in graph.topological() if n.op in EXPANSIONS]
    for node in nodes:
        expand_node(graph, node)
    return {"qlinear_expanded": len(nodes)} if nodes else {}

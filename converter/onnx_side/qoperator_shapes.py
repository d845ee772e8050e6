"""Shape inference through com.microsoft QOperator nodes, which onnx's inference does not know.

onnx leaves the outputs of an unknown op without shapes, and so everything after them. Inference
runs instead on a twin of the model where each such node is its DequantizeLinear -> float op ->
QuantizeLinear expansion (converter/onnx_side/qoperator_ops.py); the shapes found for the model's own tensors
are copied back. The model itself keeps its nodes: onnxruntime (verify's reference) runs them as
they are, with its integer kernels.
"""
from __future__ import annotations

from typing import Callable

import onnx
from onnx import helper

from converter.ir import ConversionError
from converter.onnx_side.qoperator_ops import MS_DOMAIN, MS_OPS, expansion

# com.microsoft's dynamically quantized LSTM: passes/expand_dynamic_quantization.py makes it an LSTM
DYNAMIC_MS_OPS = {"DynamicQuantizeLSTM"}


def is_qoperator(node: onnx.NodeProto) -> bool:
    """A com.microsoft node the converter expands into ONNX ops."""
    return node.domain == MS_DOMAIN and (node.op_type in MS_OPS or node.op_type in DYNAMIC_MS_OPS)


def _lstm(node: onnx.NodeProto, stem: str) -> list[onnx.NodeProto]:
    """For inference only: an LSTM reading the dequantized W and R (their axes in another order, which
    inference does not read: hidden_size is an attribute)."""
    inputs = list(node.input) + [""] * (12 - len(node.input))
    weights = [f"{stem}/w", f"{stem}/r"]
    nodes = [helper.make_node("DequantizeLinear", [inputs[k], inputs[s], inputs[z]], [w], axis=0)
             for k, s, z, w in ((1, 8, 9, weights[0]), (2, 10, 11, weights[1]))]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return nodes + [helper.make_node("LSTM", [inputs[0], *weights, *inputs[3:8]], list(node.output), **attrs)]


def _expanded(node: onnx.NodeProto, index: int) -> list[onnx.NodeProto]:
    if node.op_type in DYNAMIC_MS_OPS:
        return _lstm(node, f"{node.name or node.op_type}#{index}")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    try:
        plan = expansion(node.op_type, list(node.input), attrs)
    except ValueError as exc:
        raise ConversionError(f"{node.op_type} node '{node.name}': {exc}") from None
    stem = f"{node.name or node.op_type}#{index}"
    nodes, floats = [], []
    for k, (value, scale, zero) in enumerate(plan.triples):
        floats.append(f"{stem}/dq{k}")
        axis = {"axis": plan.weight_axis} if k == 1 and plan.weight_axis is not None else {}
        nodes.append(helper.make_node("DequantizeLinear", [value, scale, zero] if zero else [value, scale],
                                      [floats[-1]], **axis))
    result = f"{stem}/float" if plan.output else node.output[0]
    nodes.append(helper.make_node(plan.float_op, floats, [result], **plan.attrs))
    if plan.output:
        scale, zero = plan.output
        nodes.append(helper.make_node("QuantizeLinear", [result, scale, zero] if zero else [result, scale],
                                      [node.output[0]]))
    return nodes


def infer_with_qoperators(proto: onnx.ModelProto,
                          infer: Callable[[onnx.ModelProto], onnx.ModelProto]) -> onnx.ModelProto:
    """`infer(proto)`, seeing through QOperator nodes; the returned model keeps them."""
    if not any(is_qoperator(n) for n in proto.graph.node):
        return infer(proto)
    twin = onnx.ModelProto.FromString(proto.SerializeToString())
    nodes = [m for i, n in enumerate(proto.graph.node) for m in (_expanded(n, i) if is_qoperator(n) else [n])]
    del twin.graph.node[:]
    twin.graph.node.extend(nodes)
    inferred = infer(twin)
    own = {o for n in proto.graph.node for o in n.output}
    result = onnx.ModelProto.FromString(proto.SerializeToString())
    del result.graph.value_info[:]
    result.graph.value_info.extend(vi for vi in inferred.graph.value_info if vi.name in own)
    del result.graph.output[:]
    result.graph.output.extend(inferred.graph.output)
    return result

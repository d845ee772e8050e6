"""Find the QDQ-quantized Conv / Gemm / MatMul nodes ncnn can run as int8 layers.

Runs first, while DequantizeLinear still holds the int8 weights (folding turns them into
float weights). A node qualifies when its input is DequantizeLinear(QuantizeLinear(x))
with one int8 scale and zero point 0 and its weight is DequantizeLinear of a constant
int8 tensor, zero point 0, one scale per output (or one in all) and no -128. Such a layer
in ncnn quantizes x itself (q = x * (1/s), rounded, clamped to -127..127), sums in int32
and scales back, so the pair Q/DQ on its input is absorbed. Every other quantized node is
left to run in float (the Q/DQ pairs emulated exactly); the reason is kept for the report.
passes/apply_int8.py turns the planned layers into int8 after lowering.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from converter.ir import Graph, Node
from converter.onnx_side.quantized_values import quantize_linear
from converter.rewrite.fold import fold_node

INT8 = np.dtype(np.int8)


@dataclass
class ActivationPair:
    """A QuantizeLinear -> DequantizeLinear pair on an activation: absorbed when only int8 layers read it."""
    quantizer: str
    dq_out: str


@dataclass
class Int8Plan:
    x: str                       # the float tensor the layer quantizes itself
    dq_out: str                  # the dequantized tensor the ONNX node reads instead
    input_scale: float           # ONNX's scale of x (ncnn stores 1/scale)
    weight_scales: np.ndarray    # ONNX's scale per output (float32)
    # the int8 weight, outputs first (fast mode re-derives per-output scales after a fusion scaled them)
    weight_q: np.ndarray | None = None


def _scale_zero(graph: Graph, node: Node) -> tuple[np.ndarray | None, np.ndarray | None]:
    scale = graph.value(node.inputs[1])
    zero = graph.value(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    return scale, zero


def _input_reason(graph: Graph, node: Node) -> tuple[str | None, str | None, float]:
    """(why not, x, scale) for the node's activation input."""
    dq = graph.producer(node.inputs[0])
    q = graph.producer(dq.inputs[0]) if dq is not None and dq.op == "DequantizeLinear" else None
    if q is None or q.op != "QuantizeLinear":
        return "its input is not a QuantizeLinear/DequantizeLinear pair", None, 0.0
    (qs, qz), (ds, dz) = _scale_zero(graph, q), _scale_zero(graph, dq)
    if qs is None or ds is None or qs.size != 1 or ds.size != 1 or qs.ravel()[0] != ds.ravel()[0]:
        return "the input scale is not one constant shared by the pair", None, 0.0
    if qz is None or qz.dtype != INT8 or np.any(qz != 0) or dz is None or np.any(dz != 0):
        return (f"the input is quantized to {qz.dtype if qz is not None else 'uint8'} with zero point "
                f"{qz.ravel()[0] if qz is not None else 0}; ncnn int8 is symmetric int8"), None, 0.0
    return None, q.inputs[0], float(qs.ravel()[0])


def _weight_reason(graph: Graph, node: Node, out_axis: int) -> tuple[str | None, np.ndarray | None]:
    """(why not, ONNX scale per output) for the node's weight."""
    dq = graph.producer(node.inputs[1])
    q = _constant_quantized(graph, dq.inputs[0]) if dq is not None and dq.op == "DequantizeLinear" else None
    if q is None:
        return "its weight is not a DequantizeLinear of a constant", None
    scale, zero = _scale_zero(graph, dq)
    if q.dtype != INT8 or scale is None or (zero is not None and np.any(zero != 0)):
        return f"its weight is {q.dtype} with a non-zero or unknown zero point", None
    if q.min(initial=0) < -127:
        return "its weight holds -128, which ncnn's int8 cannot (it clamps to -127)", None
    outputs = q.shape[out_axis]
    if scale.size == 1:
        return None, np.full(outputs, scale.ravel()[0], np.float32)
    if scale.size != outputs or int(dq.attrs.get("axis", 1)) % q.ndim != out_axis:
        return "its weight scales are not one per output channel", None
    return None, scale.astype(np.float32).ravel()


def _constant_quantized(graph: Graph, name: str) -> np.ndarray | None:
    """The int values of a constant, or of QuantizeLinear of a constant (quantize_static leaves
    some weights float behind a Q/DQ pair), else None."""
    value, q = graph.value(name), graph.producer(name)
    if value is not None or q is None or q.op != "QuantizeLinear":
        return value
    values = [graph.value(i) if i else None for i in q.inputs]
    if any(v is None for v, i in zip(values, q.inputs) if i):
        return None
    try:
        return quantize_linear(*values, **q.attrs)[0]
    except ValueError:
        return None


def _output_axis(graph: Graph, node: Node) -> tuple[str | None, int]:
    if node.op == "Conv":
        return None, 0
    if node.op == "Gemm":
        return None, 0 if node.attrs.get("transB", 0) else 1
    weight = graph.tensors[node.inputs[1]]
    if getattr(graph.producer(weight.name), "op", None) == "DequantizeLinear" and \
            graph.value(graph.producer(weight.name).inputs[0]) is None:
        return "both its operands are computed at run time (ncnn's int8 needs a constant weight)", 0
    if weight.rank != 2:
        return "a MatMul weight of rank other than 2 does not become an InnerProduct", 0
    return None, 1


def plan_node(graph: Graph, node: Node) -> tuple[Int8Plan | None, str | None]:
    why, axis = _output_axis(graph, node)
    why = why or ("ncnn's int8 Gemm path is not used (alpha != 1 or transA)"
                  if node.op == "Gemm" and (node.attrs.get("alpha", 1.0) != 1.0 or node.attrs.get("transA", 0))
                  else None)
    if why:
        return None, why
    why, x, scale = _input_reason(graph, node)
    if why:
        return None, why
    why, weight_scales = _weight_reason(graph, node, axis)
    if why:
        return None, why
    q = _constant_quantized(graph, graph.producer(node.inputs[1]).inputs[0])
    return Int8Plan(x, node.inputs[0], scale, weight_scales, np.moveaxis(q, axis, 0).reshape(q.shape[axis], -1)), None


QUANTIZABLE = {"Conv", "Gemm", "MatMul"}
FLOAT_ONLY = {"ConvTranspose": "ncnn's Deconvolution has no int8 path"}


def plan_int8(graph: Graph) -> dict:
    if not any(n.op == "QuantizeLinear" for n in graph):
        return {}
    known = (sum(1 for p in graph.int8_plans.values() if not isinstance(p, ActivationPair)), len(graph.int8_fallbacks))
    for node in graph.topological():      # exporters (paddle2onnx) hold weights in Constant nodes
        if node.op == "Constant":
            fold_node(graph, node)
    for node in graph.topological():
        source = graph.producer(node.inputs[0]) if node.op == "DequantizeLinear" else None
        if source is not None and source.op == "QuantizeLinear":
            graph.int8_plans[node.name] = ActivationPair(source.name, node.outputs[0])
        if node.op in FLOAT_ONLY and _is_quantized(graph, node):
            graph.int8_fallbacks[node.name] = FLOAT_ONLY[node.op]
        if node.op not in QUANTIZABLE or not _is_quantized(graph, node):
            continue
        plan, why = plan_node(graph, node)
        if plan is not None:
            graph.int8_plans[node.name] = plan
        else:
            graph.int8_fallbacks[node.name] = why
    planned = sum(1 for p in graph.int8_plans.values() if not isinstance(p, ActivationPair))
    # counts what this run added: a second run plans the same nodes again and adds nothing
    return {"int8_planned": planned - known[0], "int8_fallbacks_found": len(graph.int8_fallbacks) - known[1]}


def _is_quantized(graph: Graph, node: Node) -> bool:
    """Fed by a DequantizeLinear: the quantizer meant this node to compute on quantized values."""
    return any(getattr(graph.producer(i), "op", None) == "DequantizeLinear" for i in node.inputs[:2] if i)

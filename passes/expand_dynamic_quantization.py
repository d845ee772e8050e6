"""Dynamic quantization (onnxruntime's quantize_dynamic) in float32: DynamicQuantizeLinear ->
ReduceMin/ReduceMax, the scale and zero point, Div/Round/Clip; MatMulInteger / ConvInteger -> the
float MatMul / Conv of their operands minus the zero points.

DynamicQuantizeLinear's spec, with uint8's range 0..255:
  scale = (max(0, max x) - min(0, min x)) / 255      zero = clip(round(-min(0, min x) / scale), 0, 255)
  y = clip(round(x / scale) + zero, 0, 255)
The quantized values travel as float32 whole numbers, and a constant int8 weight minus its zero point
folds to float weights, so the integer sums are float sums of whole numbers: exact below 2**24.
Approximate only in that ncnn's division is not correctly rounded on x86 (a value within an ulp of a
.5 step can land one step off) and in sums beyond 2**24; every such node is reported with that reason.
(onnxruntime's x86 uint8 x int8 kernel itself saturates pairs of products at int16, which the exact
sums here do not.) Runs before folding, so the weights' zero points fold away.
"""
from __future__ import annotations

import numpy as np

from converter.ir import ConversionError, Graph, Node, Tensor
from converter.onnx_side.defaults import fill_defaults

APPROXIMATE = ("dynamic quantization emulated in float32: the run-time scale goes through ncnn's division, "
               "not correctly rounded on x86 (a value within an ulp of a .5 step can quantize one step off "
               "onnxruntime); integer sums are exact below 2**24")
LSTM_APPROXIMATE = ("dynamically quantized LSTM run as a float LSTM with its weights dequantized: onnxruntime "
                    "also quantizes the input and every step's hidden state to uint8, this does not")
FLOAT = np.dtype(np.float32)


class _Builder:
    """Adds float ONNX nodes named after the node they replace."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node

    def const(self, value) -> str:
        return self.graph.add_constant(f"{self.node.name}_c", np.asarray(value, np.float32)).name

    def op(self, op: str, inputs: list[str], like: str | None = None, out: str | None = None, **attrs) -> str:
        g = self.graph
        if out is None:
            t = g.tensors[like] if like else None
            out = g.add_tensor(Tensor(g.fresh_name(f"{self.node.name}_{op.lower()}"), t.shape if t else (),
                                      FLOAT, batch_axis=t.batch_axis if t else None)).name
        g.tensors[out].dtype = FLOAT
        made = g.add_node(Node(g.fresh_name(f"{self.node.name}_{op.lower()}"), op, inputs, [out], attrs))
        if op == "Div":     # int8_fallbacks says, once per node, that ncnn's division is approximate
            made.meta["division_noted"] = True
        return out


def _dynamic_quantize_linear(graph: Graph, node: Node) -> None:
    x, (y, scale, zero) = node.inputs[0], node.outputs
    graph.remove_node(node)
    b = _Builder(graph, node)
    low = b.op("Min", [b.op("ReduceMin", [x], keepdims=0), b.const(0)])
    high = b.op("Max", [b.op("ReduceMax", [x], keepdims=0), b.const(0)])
    # divided, as onnxruntime does (one value: ncnn's scalar path divides exactly); times 1/255 was an
    # ulp off now and then, and a value near a .5 step of x / scale then quantized a step off
    b.op("Div", [b.op("Sub", [high, low]), b.const(255)], out=scale)
    b.op("Clip", [b.op("Round", [b.op("Div", [b.op("Neg", [low]), scale])]), b.const(0), b.const(255)], out=zero)
    steps = b.op("Round", [b.op("Div", [x, scale], like=x)], like=x)
    b.op("Clip", [b.op("Add", [steps, zero], like=x), b.const(0), b.const(255)], out=y)


def _centered(graph: Graph, b: _Builder, value: str, zero: str) -> str:
    """value - zero point as float32 (a constant stays a constant for folding)."""
    t = graph.tensors[value]
    if not zero:
        return value if t.dtype == FLOAT else b.op("Cast", [value], like=value, to=1)
    as_float = value if t.dtype == FLOAT else b.op("Cast", [value], like=value, to=1)
    z = zero if graph.tensors[zero].dtype == FLOAT else b.op("Cast", [zero], like=zero, to=1)
    return b.op("Sub", [as_float, z], like=value)


def _integer_op(graph: Graph, node: Node) -> None:
    """MatMulInteger(a, b, a_zero, b_zero) / ConvInteger(x, w, x_zero, w_zero): the float op of the
    centered operands (b_zero per column of b / w_zero per output channel of w, shaped to broadcast)."""
    slots = [node.inputs[k] if k < len(node.inputs) else "" for k in range(4)]
    graph.remove_node(node)
    b = _Builder(graph, node)
    a = _centered(graph, b, slots[0], slots[2])
    w_zero = slots[3]
    if w_zero and node.op == "ConvInteger" and graph.tensors[w_zero].shape not in ((), (1,), None):
        w_zero = graph.add_constant(f"{node.name}_wz", graph.value(w_zero).reshape(-1, 1, 1, 1)).name
    w = _centered(graph, b, slots[1], w_zero)
    float_op = "MatMul" if node.op == "MatMulInteger" else "Conv"
    attrs = {k: v for k, v in node.attrs.items()} if float_op == "Conv" else {}
    b.op(float_op, [a, w], out=node.outputs[0], **attrs)


def _dequantized_gates(graph: Graph, node: Node, value: str, scale: str, zero: str) -> str:
    """DynamicQuantizeLSTM's int8 W or R [directions, in, 4 * hidden] (scales per direction or per
    direction and column) as ONNX LSTM's float [directions, 4 * hidden, in]."""
    q, s = graph.value(value), graph.value(scale)
    z = graph.value(zero) if zero else np.zeros_like(s, dtype=np.int64)
    if q is None or s is None or z is None:
        raise ConversionError(f"{node.describe()}: its weights are not constants")
    shape = (q.shape[0], 1, -1)
    w = (q.astype(np.int64) - z.astype(np.int64).reshape(shape)).astype(np.float32) * s.astype(np.float32).reshape(shape)
    return graph.add_constant(f"{node.name}_w", np.ascontiguousarray(w.transpose(0, 2, 1))).name


def _dynamic_quantize_lstm(graph: Graph, node: Node) -> None:
    """com.microsoft's DynamicQuantizeLSTM -> LSTM with the weights dequantized. onnxruntime quantizes X
    and each step's hidden state (uint8, per tensor) before its integer products; this LSTM does not."""
    slots = node.inputs + [""] * (12 - len(node.inputs))
    w = _dequantized_gates(graph, node, slots[1], slots[8], slots[9])
    r = _dequantized_gates(graph, node, slots[2], slots[10], slots[11])
    graph.remove_node(node)
    lstm = Node(node.name, "LSTM", [slots[0], w, r, *slots[3:8]], list(node.outputs), dict(node.attrs))
    graph.add_node(fill_defaults(lstm, graph.opset))


EXPANDERS = {"DynamicQuantizeLinear": _dynamic_quantize_linear, "MatMulInteger": _integer_op,
             "ConvInteger": _integer_op, "DynamicQuantizeLSTM": _dynamic_quantize_lstm}


def expand_dynamic_quantization(graph: Graph) -> dict:
    nodes = [n for n in graph.topological() if n.op in EXPANDERS]
    for node in nodes:
        EXPANDERS[node.op](graph, node)
        graph.int8_fallbacks[node.name] = LSTM_APPROXIMATE if node.op == "DynamicQuantizeLSTM" else APPROXIMATE
    # apply_int8 reports the fallbacks again when the model also has Q/DQ pairs, these among them
    # approximate_nodes: convert's summary and the -j table say "approximate" for these models
    return {"dynamic_quantization_expanded": len(nodes), "approximate_nodes": len(nodes),
            "int8_fallbacks": dict(graph.int8_fallbacks)} if nodes else {}

"""A QDQ model's twin computing its quantizers with the arithmetic of the converted file, for
onnxruntime to run: what the spec graph gives when it quantizes as ncnn does.

The converted file quantizes in two ways, both documented deviations from the spec's
round_half_even(x / s): an int8 layer's input is quantized by ncnn itself, round(x * (1/s))
with ties away from zero and clamped to -127..127 (converter/lowering/quantize.py's notes,
passes/apply_int8.py; where float layers read the pair too, or after an average pooling, the
layer reads the pair's output and only the clamp remains); an emulated pair computes x * (1/s) (ncnn's division is not correctly
rounded), then rounds half to even. How far the twin lands from the spec graph is how much those
roundings move the outputs, measured by onnxruntime itself.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


AVERAGING = {"AveragePool", "GlobalAveragePool"}      # passes/apply_int8.py reads the lattice after these


def _quantizer(graph: onnx.GraphProto, prefix: str, q: onnx.NodeProto, constants: dict,
               ncnn_int8: bool) -> tuple[list[onnx.NodeProto], str]:
    """Nodes computing q's output the converted file's way; returns them and the quantized tensor."""
    scale = constants[q.input[1]].astype(np.float32)
    zero = constants[q.input[2]] if len(q.input) > 2 and q.input[2] else np.zeros((), np.uint8)
    low, high = (-127, 127) if ncnn_int8 else ((-128, 127) if zero.dtype == np.int8 else (0, 255))
    values = {"inverse": np.float32(1) / scale, "half": 0.5, "low": low, "high": high, "zero": zero}
    for name, v in values.items():
        graph.initializer.append(numpy_helper.from_array(np.asarray(v, np.float32), prefix + name))
    t = lambda name: prefix + name           # noqa: E731
    nodes = [helper.make_node("Mul", [q.input[0], t("inverse")], [t("scaled")])]
    if ncnn_int8:             # sign(v) * floor(|v| + 0.5)
        nodes += [helper.make_node("Abs", [t("scaled")], [t("abs")]),
                  helper.make_node("Add", [t("abs"), t("half")], [t("shifted")]),
                  helper.make_node("Floor", [t("shifted")], [t("floor")]),
                  helper.make_node("Sign", [t("scaled")], [t("sign")]),
                  helper.make_node("Mul", [t("floor"), t("sign")], [t("rounded")])]
    else:
        nodes.append(helper.make_node("Round", [t("scaled")], [t("rounded")]))
    nodes += [helper.make_node("Add", [t("rounded"), t("zero")], [t("moved")]),
              helper.make_node("Clip", [t("moved"), t("low"), t("high")], [t("clipped")]),
              helper.make_node("Cast", [t("clipped")], [t("q")], to=helper.np_dtype_to_tensor_dtype(zero.dtype))]
    return nodes, t("q")


def _activation_quantizer(q: onnx.NodeProto, constants: dict) -> bool:
    """A QuantizeLinear of a run-time tensor with one scale (the ones the twin rewrites; a per-axis
    activation quantizer keeps the spec's division, an ulp away at most)."""
    return (q.op_type == "QuantizeLinear" and q.input[0] not in constants and q.input[1] in constants
            and constants[q.input[1]].size == 1 and (len(q.input) < 3 or not q.input[2] or q.input[2] in constants))


def ncnn_arithmetic_twin(model: onnx.ModelProto, int8_nodes: set[str]) -> onnx.ModelProto:
    """`model` with the quantizers of the nodes in `int8_nodes` (the ONNX nodes the conversion ran as
    int8 layers) as ncnn's, and every other activation quantizer as an emulated pair's."""
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    graph = twin.graph
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    added = []
    readers = {}
    for node in graph.node:
        for i in node.input:
            readers.setdefault(i, []).append(node.name)
    for node in graph.node:
        dq = producer.get(node.input[0]) if node.name in int8_nodes and node.input else None
        q = producer.get(dq.input[0]) if dq is not None and dq.op_type == "DequantizeLinear" else None
        if q is None or not _activation_quantizer(q, constants):
            continue
        prefix = f"twin_int8_{node.name}_"
        averaged = producer.get(q.input[0]) is not None and producer[q.input[0]].op_type in AVERAGING
        if averaged or any(r not in int8_nodes for r in readers[dq.output[0]]):
            # float layers keep the pair running, or an average pooling makes ties: the int8 layer reads
            # its values on the lattice, and ncnn's quantizer gives their steps back but for -128,
            # which it clamps to -127
            bound = 127 * float(constants[q.input[1]].ravel()[0])
            for name, v in (("low", -bound), ("high", bound)):
                graph.initializer.append(numpy_helper.from_array(np.array(v, np.float32), prefix + name))
            added.append(helper.make_node("Clip", [dq.output[0], prefix + "low", prefix + "high"], [prefix + "dq"]))
        else:
            nodes, quantized = _quantizer(graph, prefix, q, constants, ncnn_int8=True)
            added += [*nodes, helper.make_node("DequantizeLinear", [quantized, *dq.input[1:]], [prefix + "dq"])]
        node.input[0] = prefix + "dq"
    for q in [n for n in graph.node if _activation_quantizer(n, constants)]:
        prefix = f"twin_pair_{q.name}_"
        nodes, quantized = _quantizer(graph, prefix, q, constants, ncnn_int8=False)
        added += [*nodes, helper.make_node("Identity", [quantized], [q.output[0]])]
        graph.node.remove(q)
    _sorted_into(graph, added)
    return twin


def _sorted_into(graph: onnx.GraphProto, added: list) -> None:
    """Append `added` to graph's nodes and put all in an order onnxruntime accepts."""
    pending, ordered = [*graph.node, *added], []
    ready = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    while pending:
        left = []
        for node in pending:
            if all(i in ready for i in node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                left.append(node)
        if len(left) == len(pending):
            raise ValueError(f"the twin has a cycle at {left[0].name}")
        pending = left
    del graph.node[:]
    graph.node.extend(ordered)

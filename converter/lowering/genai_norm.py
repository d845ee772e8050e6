"""SimplifiedLayerNormalization (onnxruntime's RMS norm) -> ncnn RMSNorm; com.microsoft's
SkipSimplifiedLayerNormalization -> BinaryOp add (x + skip [+ bias]) then RMSNorm.

Both normalize the last axis: y = x / sqrt(mean(x^2) + epsilon) * gamma, ncnn RMSNorm's formula
(rmsnorm.cpp). SkipSimplifiedLayerNormalization's fourth output is the sum before the norm (the
residual stream onnxruntime-genai's builder carries to the next layer); its mean and inverse
standard deviation outputs are refused where used.
"""
from __future__ import annotations

from ..ir import Graph, Node
from converter.ncnn_side.layers import BINARY_OPS
from . import lowers
from .common import constant, fail, layer, new_tensor
from .layer_norm import normalize_trailing


def _rms(graph: Graph, node: Node, x: str, gamma_slot: int, out: str) -> list[Node]:
    gamma = constant(graph, node, gamma_slot, "gamma")
    axis = node.attrs.get("axis", -1)
    rank = graph.tensors[x].rank
    if rank is not None and axis % rank != rank - 1:
        raise fail(node, graph, f"axis {axis}: only the last axis maps to ncnn RMSNorm")
    norm = Node(node.name, node.op, [x, node.inputs[gamma_slot]], [out], {"axis": -1},
                origin=node.origin or node.name)
    if gamma.ndim != 1:
        raise fail(node, graph, f"gamma of shape {list(gamma.shape)}; RMSNorm takes one per channel")
    params = {0: int(gamma.size), 1: float(node.attrs.get("epsilon", 1e-5)), 2: 1}
    return normalize_trailing(graph, norm, "RMSNorm", params, [gamma])


@lowers("SimplifiedLayerNormalization")
def simplified_layer_norm(graph: Graph, node: Node) -> list[Node]:
    for extra in node.outputs[1:]:
        if extra and graph.use_count(extra):
            raise fail(node, graph, f"output '{extra}' (the inverse standard deviation) is read; "
                                    "ncnn RMSNorm gives only the normalized tensor")
    return _rms(graph, node, node.inputs[0], 1, node.outputs[0])


@lowers("SkipSimplifiedLayerNormalization")
def skip_simplified_layer_norm(graph: Graph, node: Node) -> list[Node]:
    outs = list(node.outputs) + [""] * (4 - len(node.outputs))
    for extra in outs[1:3]:
        if extra and graph.use_count(extra):
            raise fail(node, graph, f"output '{extra}' (mean / inverse standard deviation) is read; "
                                    "ncnn RMSNorm gives only the normalized tensor")
    x = graph.tensors[node.inputs[0]]
    total = outs[3] if outs[3] and (graph.use_count(outs[3]) or outs[3] in graph.outputs) else \
        new_tensor(graph, f"{node.outputs[0]}_sum", x.shape, x.batch_axis)
    layers = [layer(node, graph, "BinaryOp", node.inputs[:2], [total], {0: BINARY_OPS["add"]}, suffix="_skip")]
    if len(node.inputs) > 3 and node.inputs[3]:
        summed = new_tensor(graph, f"{total}_nobias", x.shape, x.batch_axis)
        layers[0].outputs = [summed]
        bias = graph.tensors[node.inputs[3]].name
        layers.append(layer(node, graph, "BinaryOp", [summed, bias], [total], {0: BINARY_OPS["add"]},
                            suffix="_bias"))
    if outs[0] and graph.use_count(outs[0]) or outs[0] in graph.outputs:
        layers += _rms(graph, node, total, 2, outs[0])
    return layers

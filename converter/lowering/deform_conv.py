"""DeformConv (opset 19) -> ncnn DeformableConv2D.

ncnn's layer (deformableconv2d.cpp) reads ONNX's layouts: offset channel 2k holds the row
shift and 2k + 1 the column shift of kernel tap k = i * kernel_w + j, the mask channel k its
weight, the weight (C_out, C_in, kh, kw); a sample outside the image reads 0, bilinearly, as
in ONNX. It has no groups: group and offset_group must be 1.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .common import constant, fail, layer, optional_constant, spatial_input
from .conv import window_params


@lowers("DeformConv")
def deform_conv(graph: Graph, node: Node) -> list[Node]:
    spatial_input(graph, node, ranks=(4,))
    for name in ("group", "offset_group"):
        if int(node.attrs.get(name, 1)) != 1:
            raise fail(node, graph, f"{name}={node.attrs[name]}; ncnn's DeformableConv2D has no groups")
    weight = constant(graph, node, 1, "the weight (input 1)").astype(np.float32)
    bias = optional_constant(graph, node, 3, "the bias (input 3)") if len(node.inputs) > 3 else None
    kernel = list(node.attrs.get("kernel_shape", weight.shape[2:]))
    if weight.ndim != 4 or list(weight.shape[2:]) != kernel:
        raise fail(node, graph, f"weight shape {list(weight.shape)} does not match kernel {kernel}")
    for slot in (2, 4):
        if len(node.inputs) > slot and node.inputs[slot] and graph.tensors[node.inputs[slot]].batch_axis != 0:
            raise fail(node, graph, f"input {slot} '{node.inputs[slot]}' has no batch axis of extent 1 at axis 0")
    cout = weight.shape[0]
    pads = [int(v) for v in node.attrs.get("pads", [0, 0, 0, 0])]
    geo = {"strides": list(node.attrs.get("strides", [1, 1])), "dilations": list(node.attrs.get("dilations", [1, 1]))}
    params = window_params(cout, weight, bias, 1, kernel, geo, 2)
    top, left, bottom, right = pads
    params.update({4: left, 15: right, 14: top, 16: bottom})
    weights = [weight] + ([np.asarray(bias, np.float32).reshape(-1)] if bias is not None else [])
    inputs = [node.inputs[0], node.inputs[2]] + ([node.inputs[4]] if len(node.inputs) > 4 and node.inputs[4] else [])
    return [layer(node, graph, "DeformableConv2D", inputs, node.outputs[:1], params, weights)]

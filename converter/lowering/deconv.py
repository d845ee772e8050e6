"""ONNX ConvTranspose -> ncnn Deconvolution.

ncnn scatters every input pixel through weight[o, c, i, j] into a (h-1)*stride + extent
output, adds output_pad at the bottom/right, then cuts the pads from the borders; ONNX
computes the same window of the same scatter. ONNX's weight is (C_in, C_out, kh, kw),
ncnn's (C_out, C_in, kh, kw). Grouped transposed convolutions are refused (ncnn's
DeconvolutionDepthWise has no interpreter kernel yet).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import as_2d, spatial_input, wrap_1d
from .common import constant, fail, layer, optional_constant


def _pads(graph: Graph, node: Node, sizes, kernel, strides, dilations, out_pad, nspatial) -> list[int]:
    """[begin..., end...] pads, from the attribute or from auto_pad / output_shape (ONNX's rules)."""
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    output_shape = node.attrs.get("output_shape")
    if output_shape is None and auto_pad in ("NOTSET", "VALID"):
        pads = list(node.attrs.get("pads", [0] * (2 * nspatial)))
        return [0] * (2 * nspatial) if auto_pad == "VALID" else pads
    if any(s is None for s in sizes):
        raise fail(node, graph, "ConvTranspose with auto_pad/output_shape needs known spatial sizes; give "
                                "them with --input-shape")
    full = [st * (s - 1) + op + (k - 1) * d + 1 for s, k, st, d, op in zip(sizes, kernel, strides, dilations, out_pad)]
    wanted = list(output_shape)[-nspatial:] if output_shape is not None else [s * st for s, st in zip(sizes, strides)]
    total = [f - w for f, w in zip(full, wanted)]
    if any(t < 0 for t in total):
        raise fail(node, graph, f"output_shape {wanted} is larger than the transposed convolution's {full}")
    if auto_pad == "SAME_UPPER":
        begin = [t // 2 for t in total]
    else:
        begin = [t - t // 2 for t in total]
    return begin + [t - b for t, b in zip(total, begin)]


@lowers("ConvTranspose")
def conv_transpose(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node)
    weight = constant(graph, node, 1, "the weight (input 1)").astype(np.float32)
    bias = optional_constant(graph, node, 2, "the bias (input 2)")
    group = int(node.attrs.get("group", 1))
    kernel = list(node.attrs.get("kernel_shape", weight.shape[2:]))
    if weight.ndim != nspatial + 2 or list(weight.shape[2:]) != kernel:
        raise fail(node, graph, f"weight shape {list(weight.shape)} does not match kernel {kernel}")
    if group != 1:
        raise fail(node, graph, f"grouped ConvTranspose (group {group}) is not supported")
    cin, cout = weight.shape[0], weight.shape[1]
    if shape[1] is not None and shape[1] != cin:
        raise fail(node, graph, f"weight {list(weight.shape)} does not fit {shape[1]} input channels")
    strides = list(node.attrs.get("strides", [1] * nspatial))
    dilations = list(node.attrs.get("dilations", [1] * nspatial))
    out_pad = list(node.attrs.get("output_padding", [0] * nspatial))
    pads = _pads(graph, node, shape[2:], kernel, strides, dilations, out_pad, nspatial)
    if any(p < 0 for p in pads) or any(not 0 <= op < max(s, d) for op, s, d in zip(out_pad, strides, dilations)):
        raise fail(node, graph, f"pads {pads} / output_padding {out_pad} are out of range")
    k2, s2, d2, op2 = (as_2d(nspatial, v, one) for v, one in ((kernel, 1), (strides, 1), (dilations, 1), (out_pad, 0)))
    (top, left), (bottom, right) = as_2d(nspatial, pads[:nspatial], 0), as_2d(nspatial, pads[nspatial:], 0)
    params = {0: cout, 1: k2[1], 11: k2[0], 2: d2[1], 12: d2[0], 3: s2[1], 13: s2[0],
              4: left, 15: right, 14: top, 16: bottom, 18: op2[1], 19: op2[0], 6: int(weight.size)}
    if bias is not None:
        params[5] = 1
    weights = [np.ascontiguousarray(weight.transpose(1, 0, *range(2, weight.ndim)))]
    if bias is not None:
        weights.append(np.broadcast_to(np.asarray(bias, np.float32), (cout,)))

    def make(x: str, y: str) -> list[Node]:
        return [layer(node, graph, "Deconvolution", [x], [y], params, weights)]
    if nspatial == 1:
        return wrap_1d(graph, node, make, cout, graph.tensors[node.outputs[0]].shape[2])
    return make(node.inputs[0], node.outputs[0])

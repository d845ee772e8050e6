"""ConvTranspose -> ncnn Deconvolution (group 1) or DeconvolutionDepthWise (grouped).

Both ncnn layers scatter each input pixel times the kernel into a full
output of (n - 1) * stride + extent + output_pad, then cut the pads off, as
ONNX does; only the weight layout differs: ONNX stores (C_in, C_out/group,
kh, kw), ncnn (C_out, C_in/group, kh, kw) per group. auto_pad and
output_shape are resolved here to explicit pads, so the layer never relies on
ncnn's output_w/output_h codes.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import as_2d, conv_like_layer, conv_weights, spatial_input, window_params
from .common import fail


@lowers("ConvTranspose")
def conv_transpose(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node)
    weight, bias, group, kernel = conv_weights(graph, node, nspatial)
    cin, cout_g = weight.shape[0], weight.shape[1]
    if group < 1 or cin % group or shape[1] is not None and shape[1] != cin:
        raise fail(node, graph, f"weight {list(weight.shape)} with group {group} does not fit "
                                f"{shape[1]} input channels")
    cout = cout_g * group
    begin, end, geo = _geometry(graph, node, shape[2:], kernel, nspatial)
    params = window_params(cout, weight, bias, group, kernel, geo, nspatial)
    (top, left), (bottom, right) = as_2d(nspatial, begin, 0), as_2d(nspatial, end, 0)
    out_pad = as_2d(nspatial, geo["output_padding"], 0)
    params.update({4: left, 15: right, 14: top, 16: bottom, 18: out_pad[1], 19: out_pad[0]})
    # ONNX (group, C_in/g, C_out/g, k...) -> ncnn (group, C_out/g, C_in/g, k...)
    ncnn_weight = weight.reshape(group, cin // group, cout_g, -1).transpose(0, 2, 1, 3)
    weights = [ncnn_weight] + ([np.broadcast_to(np.asarray(bias, np.float32).ravel(), (cout,))]
                               if bias is not None else [])
    type_ = "DeconvolutionDepthWise" if group > 1 else "Deconvolution"
    return conv_like_layer(graph, node, type_, params, weights, cout, nspatial)


def _geometry(graph: Graph, node: Node, sizes, kernel: list[int], nspatial: int):
    """(begin pads, end pads, attrs) per spatial axis, with auto_pad / output_shape resolved."""
    strides = list(node.attrs.get("strides", [1] * nspatial))
    dilations = list(node.attrs.get("dilations", [1] * nspatial))
    output_padding = list(node.attrs.get("output_padding", [0] * nspatial))
    pads = list(node.attrs.get("pads", [0] * 2 * nspatial))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    output_shape = node.attrs.get("output_shape")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise fail(node, graph, f"unknown auto_pad {auto_pad!r}")
    if any(len(v) != nspatial for v in (strides, dilations, output_padding)) or len(pads) != 2 * nspatial:
        raise fail(node, graph, f"strides {strides}, dilations {dilations}, output_padding {output_padding}, "
                                f"pads {pads} do not match {nspatial} spatial axes")
    if min(strides) < 1 or min(dilations) < 1 or min(kernel) < 1 or min(output_padding) < 0:
        raise fail(node, graph, f"kernel {kernel}, strides {strides}, dilations {dilations} must be "
                                f"positive and output_padding {output_padding} not negative")
    geo = {"strides": strides, "dilations": dilations, "output_padding": output_padding}
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    if output_shape is not None:
        output_shape = list(output_shape)[-nspatial:]
        if None in sizes:
            raise fail(node, graph, "output_shape with unknown input spatial sizes: give the input "
                                    "shape with --input-shape")
        totals = [s * (n - 1) + op + e - o for s, n, op, e, o
                  in zip(strides, sizes, output_padding, extents, output_shape)]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # output n * stride: the total pad does not depend on n
        totals = [op + e - s for s, op, e in zip(strides, output_padding, extents)]
    else:
        if auto_pad == "VALID":
            pads = [0] * 2 * nspatial
        if min(pads) < 0:
            raise fail(node, graph, f"negative pads {pads} are not supported")
        return pads[:nspatial], pads[nspatial:], geo
    if min(totals) < 0:
        raise fail(node, graph, f"the output is larger than the full transposed convolution (total "
                                f"pads {totals}); ncnn cannot pad a Deconvolution's output")
    halves = [t // 2 for t in totals]
    if auto_pad == "SAME_UPPER":
        begin, end = halves, [t - h for t, h in zip(totals, halves)]
    else:
        begin, end = [t - h for t, h in zip(totals, halves)], halves
    return begin, end, geo

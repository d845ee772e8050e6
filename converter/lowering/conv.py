"""Conv and ConvTranspose -> ncnn Convolution / ConvolutionDepthWise / Deconvolution /
DeconvolutionDepthWise.

Spatial ops need the ONNX batch axis at 0, so the ncnn blob is (C, H, W) and
ncnn's channel axis is ONNX axis 1. A 1-D op (ONNX (1, C, L), ncnn (C, L)) runs
as the 2-D layer on (C, 1, L) between two Reshapes. Window geometry (pads,
auto_pad) is resolved here: explicit pads when the spatial extents are known,
ncnn's SAME codes when they are not.

The deconvolution layers scatter each input pixel times the kernel into a full
output of (n - 1) * stride + extent + output_pad, then cut the pads off, as
ONNX does; only the weight layout differs: ONNX stores (C_in, C_out/group,
kh, kw), ncnn (C_out, C_in/group, kh, kw) per group. auto_pad and
output_shape are resolved to explicit pads, so the layer never relies on
ncnn's output_w/output_h codes.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Shape
from . import lowers
from .common import (
    SAME_CODES,
    as_2d,
    constant,
    fail,
    layer,
    optional_constant,
    same_pads,
    spatial_input,
    window_attrs,
    wrap_1d,
)
from .conv3d import conv3d, conv_transpose3d
from .dynamic_conv import dynamic_conv, dynamic_conv_transpose
from .per_sample import weight_read_per_sample


def window_params(cout: int, weight: np.ndarray, bias, group: int, kernel: list, geo: dict, nspatial: int) -> dict:
    """The params Convolution and Deconvolution (and their depthwise forms) share: outputs, weight
    size, bias term, group, and kernel/stride/dilation as (w, h)."""
    params = {0: cout, 6: int(weight.size)}
    if bias is not None:
        params[5] = 1
    if group > 1:
        params[7] = group
    k2, s2, d2 = (as_2d(nspatial, v, 1) for v in (kernel, geo["strides"], geo["dilations"]))
    params.update({1: k2[1], 11: k2[0], 3: s2[1], 13: s2[0], 2: d2[1], 12: d2[0]})
    return params


def conv_weights(graph: Graph, node: Node, nspatial: int) -> tuple[np.ndarray, np.ndarray | None, int, list]:
    """Conv/ConvTranspose's constant weight (float32) and bias, group, and kernel (checked against
    the weight's spatial extents)."""
    weight = constant(graph, node, 1, "the weight (input 1)").astype(np.float32)
    bias = optional_constant(graph, node, 2, "the bias (input 2)")
    group = int(node.attrs["group"])
    kernel = list(node.attrs.get("kernel_shape", weight.shape[2:]))
    if weight.ndim != nspatial + 2 or list(weight.shape[2:]) != kernel:
        raise fail(node, graph, f"weight shape {list(weight.shape)} does not match kernel {kernel}")
    return weight, bias, group, kernel


@lowers("Conv")
def conv(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].rank == 5:
        return conv3d(graph, node, conv_weights)
    if _runtime_weight(graph, node):
        return dynamic_conv(graph, node, _conv_pads)
    shape, nspatial = spatial_input(graph, node, ranks=(3, 4, 5))
    if len(node.inputs) > 3:
        raise fail(node, graph, f"Conv takes at most 3 inputs, got {len(node.inputs)}")
    weight, bias, group, kernel = conv_weights(graph, node, nspatial)
    cout, cin_g = weight.shape[0], weight.shape[1]
    if shape[1] is not None and cin_g * group != shape[1] or cout % group:
        raise fail(node, graph, f"weight {list(weight.shape)} with group {group} does not fit "
                                f"{shape[1]} input channels")
    geo = window_attrs(graph, node, nspatial, kernel)
    params = window_params(cout, weight, bias, group, kernel, geo, nspatial)
    params.update(_conv_pads(graph, node, shape[2:], kernel, geo, nspatial))
    if bias is not None and np.size(bias) not in (1, cout):
        raise fail(node, graph, f"bias of {np.size(bias)} values for {cout} output channels")
    weights = [weight] + ([np.broadcast_to(np.asarray(bias, np.float32).reshape(-1), (cout,))]
                          if bias is not None else [])
    type_ = "ConvolutionDepthWise" if group > 1 else "Convolution"
    return conv_like_layer(graph, node, type_, params, weights, cout, nspatial)


def _runtime_weight(graph: Graph, node: Node) -> bool:
    """A weight computed at run time, or a constant one read as a blob over a batch (per_sample.py)."""
    return len(node.inputs) > 1 and bool(node.inputs[1]) and (
        graph.value(node.inputs[1]) is None or weight_read_per_sample(graph, node))


def conv_like_layer(graph: Graph, node: Node, type_: str, params: dict, weights: list, out_channels: int,
                    nspatial: int) -> list[Node]:
    """One windowed layer from the node's input to its output; a 1-D op runs it on (C, 1, L)."""
    def make(x: str, y: str) -> list[Node]:
        return [layer(node, graph, type_, [x], [y], params, weights)]
    if nspatial == 1:
        return wrap_1d(graph, node, make, out_channels, graph.tensors[node.outputs[0]].shape[2])
    return make(node.inputs[0], node.outputs[0])


def _conv_pads(graph: Graph, node: Node, sizes: Shape, kernel: list[int], geo: dict,
               nspatial: int) -> dict[int, int]:
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, geo["dilations"])]
    begin, end = geo["begin"], geo["end"]
    if geo["auto_pad"] in SAME_CODES:
        if all(s is not None for s in sizes):
            begin, end = zip(*(same_pads(s, e, st, geo["auto_pad"])
                               for s, e, st in zip(sizes, extents, geo["strides"])))
        elif all(e >= st for e, st in zip(extents, geo["strides"])):
            return {4: SAME_CODES[geo["auto_pad"]]}     # ncnn pads at run time, same rule
        else:
            raise fail(node, graph, f"auto_pad {geo['auto_pad']} with a kernel extent smaller than the "
                                    "stride needs known spatial sizes; give them with --input-shape")
    (top, left), (bottom, right) = as_2d(nspatial, list(begin), 0), as_2d(nspatial, list(end), 0)
    return {4: left, 15: right, 14: top, 16: bottom}


@lowers("ConvTranspose")
def conv_transpose(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].rank == 5:
        return conv_transpose3d(graph, node, conv_weights, _geometry)
    if _runtime_weight(graph, node):
        return dynamic_conv_transpose(graph, node, _geometry)
    shape, nspatial = spatial_input(graph, node, ranks=(3, 4, 5))
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
    # strides/dilations/output_padding/pads/output_shape: no schema default
    strides = list(node.attrs.get("strides", [1] * nspatial))
    dilations = list(node.attrs.get("dilations", [1] * nspatial))
    output_padding = list(node.attrs.get("output_padding", [0] * nspatial))
    pads = list(node.attrs.get("pads", [0] * 2 * nspatial))
    auto_pad = node.attrs["auto_pad"]
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



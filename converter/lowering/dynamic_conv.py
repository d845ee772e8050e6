"""Conv / ConvTranspose whose weight is computed or fed at run time -> ncnn's dynamic-weight
Convolution / ConvolutionDepthWise (19=1) / Deconvolution / DeconvolutionDepthWise (28=1).

The weight becomes the layer's second bottom and the bias, if any, its third (a constant
bias gets a MemoryData layer). ncnn reads the kernel size and output count from the weight
blob, which must therefore be 4-D: ONNX (out, in/group, kh, kw) for Conv, ONNX's own
(in, out/group, kh, kw) for ConvTranspose. A weight whose ncnn shape is not that (a leading
extent 1 taken as a batch axis, or a 1-D op's (out, in, k)) is reshaped to it first. A 1-D op
runs as the 2-D layer on (C, 1, L), its weight as (out, in, 1, k).
"""
from __future__ import annotations

from ..ir import Graph, Node
from .common import as_2d, fail, layer, reshape_to, spatial_input, window_attrs, wrap_1d
from .per_sample import per_sample


def _spatial(graph: Graph, node: Node):
    x, w = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    if x.rank not in (3, 4) or w.rank != x.rank or w.shape is None:
        raise fail(node, graph, f"run-time weight '{w.name}' {w.shape}: only 1-D and 2-D convolutions are "
                                "lowered to ncnn's dynamic-weight layers; 3-D ones need a constant weight")
    if w.dtype.kind != "f":
        raise fail(node, graph, f"weight '{w.name}' is {w.dtype}; ncnn computes in float only")
    return spatial_input(graph, node, ranks=(3, 4))


def _weight_blob(graph: Graph, node: Node, nspatial: int) -> tuple[list[Node], str, list]:
    """The weight as a 4-D ncnn blob (out-or-in, in-or-out, kh, kw), with its 2-D shape."""
    w = graph.tensors[node.inputs[1]]
    shape4 = list(w.shape[:2]) + as_2d(nspatial, list(w.shape[2:]), 1)
    if len(w.ncnn_shape) == 4 and nspatial == 2:
        return [], w.name, shape4
    pre, name = reshape_to(graph, node, w.name, tuple(shape4), None, suffix="_weight4d")
    return [pre], name, shape4


def _bias(graph: Graph, node: Node) -> list[str]:
    if len(node.inputs) > 2 and node.inputs[2]:
        b = graph.tensors[node.inputs[2]]
        if b.rank != 1:
            raise fail(node, graph, f"bias '{b.name}' {b.shape} is not 1-D")
        return [b.name]
    return []


def _window(params: dict, kernel: list, geo: dict, nspatial: int) -> None:
    k2, s2, d2 = (as_2d(nspatial, list(v), 1) for v in (kernel, geo["strides"], geo["dilations"]))
    params.update({1: k2[1], 11: k2[0], 3: s2[1], 13: s2[0], 2: d2[1], 12: d2[0]})


def _kernel(graph: Graph, node: Node, wshape: list, nspatial: int) -> list:
    kernel = list(node.attrs.get("kernel_shape", wshape[4 - nspatial:]))
    if None in kernel or None not in wshape and kernel != wshape[4 - nspatial:]:
        raise fail(node, graph, f"kernel_shape {kernel} does not match the weight {wshape}")
    return kernel


def _emit(graph: Graph, node: Node, type_: str, params: dict, inputs: list, out_channels, nspatial: int):
    def make(x: str, y: str) -> list[Node]:
        return [layer(node, graph, type_, [x, *inputs], [y], params)]
    if nspatial == 1:
        return wrap_1d(graph, node, make, out_channels, graph.tensors[node.outputs[0]].shape[2])
    return make(node.inputs[0], node.outputs[0])


def dynamic_conv(graph: Graph, node: Node, pads_of) -> list[Node]:
    """`pads_of(graph, node, sizes, kernel, geo, nspatial)` is Conv's pad params resolver."""
    samples = per_sample(graph, node, [0], lambda g, n: dynamic_conv(g, n, pads_of))     # a batch N > 1
    if samples is not None:
        return samples
    shape, nspatial = _spatial(graph, node)
    pre, weight, wshape = _weight_blob(graph, node, nspatial)
    group = int(node.attrs["group"])
    kernel = _kernel(graph, node, wshape, nspatial)
    geo = window_attrs(graph, node, nspatial, kernel)
    bias = _bias(graph, node)
    params = {19: 1}
    if wshape[0] is not None:
        params[0] = wshape[0]
    if bias:
        params[5] = 1
    _window(params, kernel, geo, nspatial)
    params.update(pads_of(graph, node, shape[2:], kernel, geo, nspatial))
    type_ = "Convolution"
    if group > 1:
        type_, params[7] = "ConvolutionDepthWise", group
    return pre + _emit(graph, node, type_, params, [weight, *bias], wshape[0], nspatial)


def dynamic_conv_transpose(graph: Graph, node: Node, geometry) -> list[Node]:
    """`geometry(graph, node, sizes, kernel, nspatial)` is deconv's (begin, end, attrs) resolver."""
    samples = per_sample(graph, node, [0], lambda g, n: dynamic_conv_transpose(g, n, geometry))
    if samples is not None:
        return samples
    shape, nspatial = _spatial(graph, node)
    group = int(node.attrs["group"])
    pre, weight, wshape = _weight_blob(graph, node, nspatial)
    kernel = _kernel(graph, node, wshape, nspatial)
    begin, end, geo = geometry(graph, node, shape[2:], kernel, nspatial)
    bias = _bias(graph, node)
    params = {28: 1}
    out_channels = None if wshape[1] is None else wshape[1] * group
    if out_channels is not None:
        params[0] = out_channels
    if bias:
        params[5] = 1
    _window(params, kernel, geo, nspatial)
    (top, left), (bottom, right) = as_2d(nspatial, list(begin), 0), as_2d(nspatial, list(end), 0)
    out_pad = as_2d(nspatial, list(geo["output_padding"]), 0)
    params.update({4: left, 15: right, 14: top, 16: bottom, 18: out_pad[1], 19: out_pad[0]})
    type_ = "Deconvolution"
    if group > 1:
        type_, params[7] = "DeconvolutionDepthWise", group
    return pre + _emit(graph, node, type_, params, [weight, *bias], out_channels, nspatial)

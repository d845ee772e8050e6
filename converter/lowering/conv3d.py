"""3-D Conv, MaxPool, AveragePool and global pools on ONNX (1, C, D, H, W) -> ncnn Convolution3D
(ConvolutionDepthWise3D when grouped) / Pooling3D on the (C, D, H, W) blob.

Conv, ConvTranspose, pooling and global pooling call these for rank-5 inputs (the convolutions
pass their weight reader, `weights_of`). Pads are always written
explicitly (auto_pad resolved from known sizes): ncnn's run-time SAME_LOWER code puts the odd
pixel of d last, unlike ONNX. ncnn's params name the axes w, h, d; ONNX lists them d, h, w.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node
from .common import fail, layer, new_tensor, pool_window, reshape_to, same_pads, spatial_input, window_attrs

MAX, AVG = 0, 1


def _explicit_pads(graph: Graph, node: Node, sizes, extents, geo) -> tuple[list[int], list[int]]:
    begin, end = list(geo["begin"]), list(geo["end"])
    if geo["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
        if None in sizes:
            raise fail(node, graph, f"auto_pad {geo['auto_pad']} on a 3-D input needs known spatial sizes "
                                    "(ncnn's run-time SAME_LOWER pads d like SAME_UPPER); give them with "
                                    "--input-shape")
        begin, end = map(list, zip(*(same_pads(n, e, s, geo["auto_pad"])
                                     for n, e, s in zip(sizes, extents, geo["strides"]))))
    return begin, end


def _dhw(params: dict, ids: tuple[int, int, int], values) -> None:
    """ONNX (d, h, w) values into ncnn param ids given as (w id, h id, d id)."""
    d, h, w = values
    params.update({ids[0]: int(w), ids[1]: int(h), ids[2]: int(d)})


def _window_params(cout: int, weight: np.ndarray, kernel, geo: dict, begin, end) -> dict:
    """The 3-D Convolution/Deconvolution params both share: outputs, weight size and the window."""
    params = {0: cout, 6: int(weight.size)}
    _dhw(params, (1, 11, 21), kernel)
    _dhw(params, (2, 12, 22), geo["dilations"])
    _dhw(params, (3, 13, 23), geo["strides"])
    _dhw(params, (4, 14, 24), begin)
    _dhw(params, (15, 16, 17), end)
    return params


def conv3d(graph: Graph, node: Node, weights_of) -> list[Node]:
    shape, nspatial = spatial_input(graph, node, ranks=(5,))
    weight, bias, group, kernel = weights_of(graph, node, nspatial)
    cout, cin_g = weight.shape[0], weight.shape[1]
    if group < 1 or shape[1] is not None and cin_g * group != shape[1] or cout % group:
        raise fail(node, graph, f"weight {list(weight.shape)} with group {group} does not fit "
                                f"{shape[1]} input channels")
    geo = window_attrs(graph, node, nspatial, kernel)
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, geo["dilations"])]
    begin, end = _explicit_pads(graph, node, shape[2:], extents, geo)
    params = _window_params(cout, weight, kernel, geo, begin, end)
    weights = [weight]
    if bias is not None:
        if np.size(bias) not in (1, cout):
            raise fail(node, graph, f"bias of {np.size(bias)} values for {cout} output channels")
        params[5] = 1
        weights.append(np.broadcast_to(np.asarray(bias, np.float32).reshape(-1), (cout,)))
    type_ = "Convolution3D"
    if group > 1:
        type_, params[7] = "ConvolutionDepthWise3D", group
    return [layer(node, graph, type_, node.inputs[:1], node.outputs[:1], params, weights)]


def pool3d(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node, ranks=(5,))
    kernel, geo, avg, include_pad = pool_window(graph, node, nspatial)
    sizes = list(shape[2:])
    begin, end = _explicit_pads(graph, node, sizes, kernel, geo)
    if node.attrs["ceil_mode"]:
        end = _ceil_tail(graph, node, sizes, kernel, geo["strides"], begin, end, include_pad)
    params = {0: AVG if avg else MAX, 5: 1, 6: int(include_pad)}
    _dhw(params, (1, 11, 21), kernel)
    _dhw(params, (2, 12, 22), geo["strides"])
    _dhw(params, (3, 13, 23), begin)
    _dhw(params, (14, 15, 16), end)
    return [layer(node, graph, "Pooling3D", node.inputs[:1], node.outputs[:1], params)]


def _ceil_tail(graph, node, sizes, kernel, strides, begin, end, include_pad) -> list[int]:
    """End pads grown by ceil_mode's partial last window, which averages never count."""
    if None in sizes:
        raise fail(node, graph, "ceil_mode on a 3-D input needs known spatial sizes; give them with "
                                "--input-shape")
    grown = []
    for i, (n, k, s, b, e) in enumerate(zip(sizes, kernel, strides, begin, end)):
        count = math.ceil((n + b + e - k) / s) + 1
        if (count - 1) * s >= n + b:
            raise fail(node, graph, f"ceil_mode: the last window on spatial axis {i} would start in the "
                                    "end padding, where onnxruntime and ONNX shape inference disagree")
        tail = (count - 1) * s + k - (n + b + e)
        if tail and include_pad:
            raise fail(node, graph, "ceil_mode with count_include_pad=1 on a 3-D input: ncnn would count "
                                    "the partial window's tail as padding, onnxruntime does not")
        grown.append(e + tail)
    return grown


def global_pool3d(graph: Graph, node: Node) -> list[Node]:
    """ncnn's global Pooling3D gives a 1-D [C]; the ONNX result keeps its unit spatial axes."""
    shape, _ = spatial_input(graph, node, ranks=(5,))
    out = node.outputs[0]
    pooled = new_tensor(graph, f"{out}_pooled", (1, shape[1]), 0)
    kind = AVG if node.op == "GlobalAveragePool" else MAX
    return [layer(node, graph, "Pooling3D", node.inputs[:1], [pooled], {0: kind, 4: 1}),
            reshape_to(graph, node, pooled, None, None, out=out)[0]]


def conv_transpose3d(graph: Graph, node: Node, weights_of, geometry) -> list[Node]:
    """ConvTranspose -> Deconvolution3D (DeconvolutionDepthWise3D when grouped); `geometry` is deconv's resolver of explicit
    (begin, end) pads, so the layer never relies on ncnn's output_w/h/d codes."""
    shape, nspatial = spatial_input(graph, node, ranks=(5,))
    weight, bias, group, kernel = weights_of(graph, node, nspatial)
    cin, cout = weight.shape[0], weight.shape[1] * group
    if group < 1 or cin % group or shape[1] is not None and shape[1] != cin:
        raise fail(node, graph, f"weight {list(weight.shape)} with group {group} does not fit "
                                f"{shape[1]} input channels")
    begin, end, geo = geometry(graph, node, shape[2:], kernel, nspatial)
    params = _window_params(cout, weight, kernel, geo, begin, end)
    _dhw(params, (18, 19, 20), geo["output_padding"])
    # ONNX (in, out/group, k...) -> ncnn per group (out/group, in/group, k...)
    weights = [weight.reshape(group, cin // group, *weight.shape[1:]).swapaxes(1, 2)]
    if bias is not None:
        params[5] = 1
        weights.append(np.broadcast_to(np.asarray(bias, np.float32).reshape(-1), (cout,)))
    type_ = "Deconvolution3D"
    if group > 1:
        type_, params[7] = "DeconvolutionDepthWise3D", group
    return [layer(node, graph, type_, node.inputs[:1], node.outputs[:1], params, weights)]

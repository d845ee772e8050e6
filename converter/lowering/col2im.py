"""ONNX Col2Im -> ncnn Fold (col2im, overlapping taps summed).

Both read the columns as (C * kh * kw, L): channel-major, then the kernel's taps row by row, and
place them at the positions a (dilated, strided) window takes over the padded image; ONNX's pads
are [top, left, bottom, right]. A batch N > 1 runs sample by sample (per_sample.py).
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import constant, fail, layer, require_float
from .per_sample import per_sample


@lowers("Col2Im")
def col2im(graph: Graph, node: Node) -> list[Node]:
    samples = per_sample(graph, node, [0], col2im)
    if samples is not None:
        return samples
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    image = [int(v) for v in constant(graph, node, 1, "image_shape").reshape(-1)]
    block = [int(v) for v in constant(graph, node, 2, "block_shape").reshape(-1)]
    if len(image) != 2 or len(block) != 2:
        raise fail(node, graph, f"a {len(image)}-D image: ncnn's Fold builds 2-D images only")
    if x.shape is None or x.rank != 3 or x.batch_axis != 0 or x.shape[1] is None:
        raise fail(node, graph, f"input '{x.name}' {x.shape} (batch axis {x.batch_axis}) is not (1, C * kh * kw, L) "
                                "with its channel rows known")
    dilations = list(node.attrs.get("dilations", [1, 1]))
    strides = list(node.attrs.get("strides", [1, 1]))
    top, left, bottom, right = list(node.attrs.get("pads", [0, 0, 0, 0]))
    if min(top, left, bottom, right) < 0:
        raise fail(node, graph, f"negative pads {[top, left, bottom, right]}: ncnn's Fold takes pads >= 0")
    (kh, kw), (h, w) = block, image
    params = {0: x.shape[1] // (kh * kw), 1: kw, 11: kh, 2: dilations[1], 12: dilations[0], 3: strides[1],
              13: strides[0], 4: left, 14: top, 15: right, 16: bottom, 20: w, 21: h}
    return [layer(node, graph, "Fold", node.inputs[:1], node.outputs[:1], params)]

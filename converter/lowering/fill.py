"""A ConstantOfShape of run-time shape (converter/shapes/runtime_fill.py) -> MemoryData + Interp (+ Reshape).

ncnn has no layer that makes a tensor of a computed shape, but Interp on a 1-D blob
fills one channel per element to the size its expression (9=) gives: a MemoryData
holding the fill value once per channel, Interp to [w, h], then a Reshape to the
wanted rank. The channel count must be known at conversion time (the leading
extent of a 3-D fill, the two leading ones of a 4-D fill).
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import expression_list
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.symbolic import SHAPE_TERMS, Renderer, known_value

from ..ir import Graph, Node
from . import lowers
from .common import depends_on, fail, layer, new_tensor, reshape_layer

NEAREST = 1


@lowers("ConstantOfShape")
def constant_of_shape(graph: Graph, node: Node) -> list[Node]:
    if SHAPE_TERMS not in node.meta:
        raise fail(node, graph, f"the shape must be a constant or a size ncnn can compute, but "
                                f"{depends_on(graph, node.inputs[0])}")
    terms, value = node.meta[SHAPE_TERMS], node.meta[FILL_VALUE]
    out = graph.tensors[node.outputs[0]]
    rank = len(terms)
    if rank > 4:
        raise fail(node, graph, f"a {rank}-D fill; ncnn holds at most 4 axes")
    lead = terms[:rank - 2] if rank > 2 else []
    channels = int(np.prod([known_value(t) for t in lead])) if all(known_value(t) for t in lead) else None
    if channels is None:
        raise fail(node, graph, f"the leading extents {lead} of the fill are known only at run time; "
                                "ncnn can size only the two innermost at run time; static input shapes "
                                "(--input-shape) make it a constant")
    width, height = terms[-1], (terms[-2] if rank >= 2 else 1)
    source = graph.add_constant(f"{out.name}_value", np.full(channels, value, dtype=np.float32)).name
    renderer = Renderer(graph, source, node)
    try:
        size = expression_list([renderer.render(width), renderer.render(height)])
    except ValueError as exc:
        raise fail(node, graph, str(exc)) from None
    grid_shape = (channels, known_value(height), known_value(width))
    grid = out.name if rank == 3 and out.batch_axis is None else new_tensor(graph, f"{out.name}_grid",
                                                                           grid_shape, None)
    fill = layer(node, graph, "Interp", renderer.bottoms, [grid], {0: NEAREST, 9: size})
    if grid == out.name:
        return [fill]
    pairs = {len(out.ncnn_shape) - 1: 2}
    if rank >= 2 and len(out.ncnn_shape) >= 2:
        pairs[len(out.ncnn_shape) - 2] = 1
    return [fill, reshape_layer(graph, node, grid, out.name, pairs, suffix="_shape")]

"""ONNX Tile (constant repeats) and Expand (constant shape) -> ncnn Tile.

Expand is a Tile of x, aligned to the result's rank numpy-style (leading
ones), repeating each extent-1 axis to the result's extent; unlike x * ones,
it puts no constant the size of the result into the .bin.

The repeats array has one entry per ncnn axis: ncnn reads a shorter array
against the innermost axes and 3 repeats on a 4-D blob as d, h, w. A Reshape
first gives x the result's rank where it differs, and keeps the batch axis
as a real axis when it is repeated (the result then has no batch axis).
"""
from __future__ import annotations

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import constant, fail, layer, new_tensor, require_float, reshape_layer


@lowers("Tile")
def tile(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    repeats = [int(r) for r in constant(graph, node, 1, "repeats").reshape(-1)]
    if x.rank is None or len(repeats) != x.rank:
        raise fail(node, graph, f"repeats {repeats} must have one entry per axis of '{x.name}'")
    if any(r < 1 for r in repeats):
        raise fail(node, graph, f"repeats {repeats}: ncnn cannot hold empty tensors")
    return _tile(graph, node, x, repeats)


@lowers("Expand")
def expand(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.dtype.kind not in "biuf":      # bools and integers travel as float numbers; a copy keeps them
        require_float(graph, node)
    asked = [int(d) for d in constant(graph, node, 1, "the target shape").reshape(-1)]
    if x.shape is None or out.shape is None:
        raise fail(node, graph, f"output shape {out.shape} has unknown extents; give static input shapes")
    aligned = (1,) * (out.rank - x.rank) + tuple(x.shape)
    asked = [1] * (out.rank - len(asked)) + asked
    repeats = []
    for have, want, wanted in zip(aligned, out.shape, asked):
        if want is None and (have is not None or wanted != 1):
            raise fail(node, graph, f"output shape {out.shape} has unknown extents; give static input shapes")
        if want is None:            # an unknown extent of x the target keeps (asks 1 there): no repeat
            repeats.append(1)
            continue
        if have is None and want != 1:
            raise fail(node, graph, f"whether '{x.name}' {list(x.shape)} must grow to {list(out.shape)} "
                                    "depends on an unknown extent; give static input shapes")
        repeats.append(want if have == 1 else 1)
    return _tile(graph, node, x, repeats)


def _tile(graph: Graph, node: Node, x: Tensor, repeats: list[int]) -> list[Node]:
    """x (aligned with leading ones to len(repeats) axes) tiled `repeats` times into the output."""
    out = graph.tensors[node.outputs[0]]
    grow = len(repeats) - x.rank
    batch = None if x.batch_axis is None else x.batch_axis + grow
    if batch is not None and repeats[batch] > 1:
        batch = None                         # a repeated batch axis becomes a real one
    if out.batch_axis != batch:
        raise fail(node, graph, f"the result's batch axis {out.batch_axis} is not x's ({x.batch_axis})")
    shape = (1,) * grow + tuple(x.shape)
    staged = Tensor("", shape, batch_axis=batch)
    if len(staged.ncnn_shape) > 4:
        raise fail(node, graph, f"the result needs {len(staged.ncnn_shape)} ncnn axes; ncnn holds at most 4")
    kept = [r for i, r in enumerate(repeats) if i != batch]
    tiled = any(r > 1 for r in kept)
    if staged.ncnn_shape == x.ncnn_shape:
        if not tiled:
            return [layer(node, graph, "Noop", [x.name], [out.name])]
        return [layer(node, graph, "Tile", [x.name], [out.name], {2: kept})]
    source = new_tensor(graph, f"{x.name}_aligned", shape, batch) if tiled else out.name
    pairs = {staged.ncnn_axis(i + grow): x.ncnn_axis(i) for i in range(x.rank)}
    pairs = {a: b for a, b in pairs.items() if a is not None and b is not None}
    align = reshape_layer(graph, node, x.name, source, pairs, target=staged.ncnn_shape, suffix="_align")
    if not tiled:
        return [align]
    return [align, layer(node, graph, "Tile", [source], [out.name], {2: kept})]

"""Constant Gather indices as strided slices: torch's unfold exports index rows such as
[0, 2, 4, ..., 66] (a stride or dilation of 2), one Crop per element as runs of step 1, but one
strided slice (slice.py's Steps: Crop, Reshape, Crop) as a progression. The indices are cut
greedily into progressions first, first + step, ... (step >= 1); pieces are copies, so exact.
"""
from __future__ import annotations

from ..ir import Graph, Node, Tensor
from .slice import Steps


def progressions(indices: list[int]) -> list[tuple[int, int, int]]:
    """(first, count, step) pieces covering `indices` in order; a repeated index starts a new piece."""
    pieces: list[list[int]] = []     # [first, count, step]
    for i in indices:
        if pieces:
            first, count, step = pieces[-1]
            last = first + (count - 1) * step
            if count == 1 and i > last or count > 1 and i - last == step:
                pieces[-1] = [first, count + 1, i - first if count == 1 else step]
                continue
        pieces.append([i, 1, 1])
    return [tuple(p) for p in pieces]


def strided_pieces(graph: Graph, node: Node, x: Tensor, nc_axis: int,
                   pieces: list[tuple[int, int, int]]) -> tuple[list[Node], list[str]] | None:
    """One strided slice of x along ncnn axis `nc_axis` per piece, or None when x's ncnn extents
    are not all known."""
    shape = x.ncnn_shape
    if shape is None or None in shape:
        return None
    steps = Steps(graph, node, x.name, tuple(shape))       # one numbering for every piece's layers
    names = []
    for first, count, step in pieces:
        steps.current, steps.shape = x.name, tuple(shape)
        if step == 1 or count == 1:
            steps.current = steps.crop(nc_axis, first, first + count)
        else:
            steps.pick(nc_axis, first, count, step)
        names.append(steps.current)
    return steps.layers, names

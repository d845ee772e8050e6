"""ONNX Slice with steps other than 1 -> ncnn Flip, Crop, Reshape (and Concat), all extents known.

A negative step is a Flip of the axis followed by a positive step. A step
s > 1 picking k elements from `first` takes the run of k * s elements that
starts there, views it as (outer, k, s, inner) and crops the first of every
s; when that run would pass the end of the axis, the last element comes
from its own Crop and a Concat joins the two. The intermediate tensors live
in ncnn coordinates (no batch axis), so every Reshape has explicit extents.
"""
from __future__ import annotations

import math

from ..ir import Graph, Node
from ..ncnn_axes import reshape_params
from .common import fail, layer, new_tensor


class Steps:
    """Layers that move a tensor of known ncnn shape step by step; the last one writes `out`."""

    def __init__(self, graph: Graph, node: Node, source: str, shape: tuple[int, ...]):
        self.graph, self.node, self.current, self.shape, self.layers = graph, node, source, shape, []

    def emit(self, type_: str, params: dict, shape: tuple[int, ...], inputs=None, suffix="") -> str:
        out = new_tensor(self.graph, f"{self.node.outputs[0]}{suffix}", shape, None)
        # layer() cannot see these names yet (they join the graph together): number them
        self.layers.append(layer(self.node, self.graph, type_, inputs or [self.current], [out], params,
                                 suffix=f"{suffix}_{len(self.layers)}"))
        return out

    def then(self, type_: str, params: dict, shape: tuple[int, ...], suffix: str) -> None:
        self.current, self.shape = self.emit(type_, params, shape, suffix=suffix), shape

    def crop(self, axis: int, start: int, stop: int, source: str | None = None,
             shape: tuple[int, ...] | None = None) -> str:
        shape = list(shape or self.shape)
        shape[axis] = stop - start
        return self.emit("Crop", {9: [start], 10: [stop], 11: [axis]}, tuple(shape),
                         inputs=[source or self.current], suffix="_crop")

    def reshape(self, source: str, shape: tuple[int, ...]) -> str:
        return self.emit("Reshape", reshape_params(shape), shape, inputs=[source], suffix="_view")

    def pick(self, axis: int, first: int, count: int, step: int) -> None:
        """Elements first, first + step, ... (count of them) along `axis`."""
        extent = self.shape[axis]
        whole = count if first + count * step <= extent else count - 1
        parts = []
        if whole:
            run = self.crop(axis, first, first + whole * step)
            outer, inner = math.prod(self.shape[:axis]), math.prod(self.shape[axis + 1:])
            grouped = self.reshape(run, (outer, whole, step, inner))
            picked = self.crop(2, 0, 1, source=grouped, shape=(outer, whole, step, inner))
            parts.append(self.reshape(picked, self.shape[:axis] + (whole,) + self.shape[axis + 1:]))
        if whole < count:
            last = first + (count - 1) * step
            parts.append(self.crop(axis, last, last + 1))
        shape = self.shape[:axis] + (count,) + self.shape[axis + 1:]
        if len(parts) == 1:
            self.current, self.shape = parts[0], shape
        else:
            self.current, self.shape = self.emit("Concat", {0: axis}, shape, inputs=parts, suffix="_join"), shape

    def finish(self, out: str) -> list[Node]:
        """Route the last layer's result to `out` (a Noop when nothing was emitted)."""
        if not self.layers:
            return [layer(self.node, self.graph, "Noop", [self.current], [out])]
        self.layers[-1].outputs[-1] = out
        return self.layers


def strided_slice(graph: Graph, node: Node, picks: list[tuple[int, int, int]]) -> list[Node]:
    """`picks`: (ncnn axis, first index, count, step) per sliced axis, step != 0, the batch axis left out."""
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    shape = x.ncnn_shape
    if None in shape:
        raise fail(node, graph, f"a Slice with steps needs every extent of '{x.name}' {list(x.shape)}; "
                                "give static input shapes with --input-shape")
    steps = Steps(graph, node, x.name, tuple(shape))
    flips = [a for a, _, _, s in picks if s < 0]
    if flips:
        steps.then("Flip", {0: flips}, steps.shape, "_flip")
    for axis, first, count, step in picks:
        if step < 0:                          # in the flipped axis, index i is extent - 1 - i
            first, step = steps.shape[axis] - 1 - first, -step
        if step == 1 or count == 1:
            if (first, count) != (0, steps.shape[axis]):
                steps.current = steps.crop(axis, first, first + count)
                steps.shape = steps.shape[:axis] + (count,) + steps.shape[axis + 1:]
        else:
            steps.pick(axis, first, count, step)
    if steps.shape != tuple(out.ncnn_shape):
        raise fail(node, graph, f"sliced to {list(steps.shape)}, but the output's ncnn shape is "
                                f"{list(out.ncnn_shape)}")
    return steps.finish(out.name)

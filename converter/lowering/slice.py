"""Split and Slice -> ncnn Slice / Crop (Crop 19/20/21 expressions for run-time bounds).

Slice with steps other than 1 -> ncnn Flip, Crop, Reshape (and Concat), all
extents known. A negative step is a Flip of the axis followed by a positive
step. A step s > 1 picking k elements from `first` takes the run of k * s
elements that starts there, views it as (outer, k, s, inner) and crops the
first of every s; when that run would pass the end of the axis, the last
element comes from its own Crop and a Concat joins the two. The intermediate
tensors live in ncnn coordinates (no batch axis), so every Reshape has
explicit extents.
"""
from __future__ import annotations

import math

from converter.ncnn_side.axes import reshape_params
from converter.ncnn_side.expression import expression_list
from converter.shapes.symbolic import SLICE_TERMS, Ref, Renderer, op

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import constant, fail, layer, ncnn_axis, new_tensor, optional_constant


# ---- Split / Slice -------------------------------------------------------
@lowers("Split")
def split(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    axis = node.attrs["axis"]
    if len(node.outputs) == 1:      # one part: the tensor itself (torch's list(images) splits the batch)
        return [layer(node, graph, "Noop", [x.name], list(node.outputs))]
    nc_axis = ncnn_axis(graph, node, x.name, axis)
    extent = x.shape[axis]
    n = len(node.outputs)
    sizes = node.attrs.get("split")
    if sizes is None:
        value = optional_constant(graph, node, 1, "split sizes")
        sizes = None if value is None else [int(s) for s in value.reshape(-1)]
    if sizes is None and extent is not None:
        chunk = -(-extent // n)             # ceil: opset 18's num_outputs makes the last one smaller
        sizes = [min(chunk, extent - k * chunk) for k in range(n)]
    if sizes is None:
        if "num_outputs" in node.attrs:
            raise fail(node, graph, f"num_outputs={n} along an axis of unknown extent: ONNX makes the "
                                    "last part smaller when it does not divide, ncnn the first ones; "
                                    "give static input shapes with --input-shape")
        sizes = [-233] * n                  # ncnn: equal parts of the runtime extent
    elif len(sizes) != n or any(s <= 0 for s in sizes):
        raise fail(node, graph, f"split sizes {sizes} for {n} outputs: ncnn cannot hold empty outputs")
    return [layer(node, graph, "Slice", [x.name], list(node.outputs), {0: sizes, 1: nc_axis})]


def _slice_bounds(node: Node, graph: Graph, extent: int | None, start: int, end: int) -> tuple[int, int]:
    """ONNX start/end (step 1) -> the start/end ncnn Crop computes the same range from."""
    if extent is not None:
        start = min(max(start + extent if start < 0 else start, 0), extent)
        end = min(max(end + extent if end < 0 else end, 0), extent)
        if end <= start:
            raise fail(node, graph, f"the slice [{start}:{end}] is empty; ncnn cannot hold empty tensors")
        return start, end
    # unknown extent: ncnn adds the extent to negative values and clamps ends to it;
    # an end of 0 would mean "to the end" in ncnn but "empty" in ONNX
    if end == 0 or start >= INT32_MAX or (start >= 0 and end > 0 and end <= start):
        raise fail(node, graph, f"the slice [{start}:{end}] is empty; ncnn cannot hold empty tensors")
    if start < -1:
        raise fail(node, graph, f"start {start} on an axis of unknown extent: ONNX clamps it to 0 when the "
                                f"extent is below {-start}, ncnn does not; give static input shapes")
    if end == -233 or end < -INT32_MAX:
        raise fail(node, graph, f"slice end {end} on an axis of unknown extent is not expressible in ncnn")
    return start, min(end, INT32_MAX)


@lowers("Slice")
def slice_(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    if SLICE_TERMS in node.meta:
        return [_expressed_slice(graph, node, x, out)]
    starts = [int(v) for v in constant(graph, node, 1, "starts").reshape(-1)]
    ends = [int(v) for v in constant(graph, node, 2, "ends").reshape(-1)]
    axes = optional_constant(graph, node, 3, "axes")
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes.reshape(-1)]
    steps = optional_constant(graph, node, 4, "steps")
    if steps is not None and any(int(s) != 1 for s in steps.reshape(-1)):
        return _strided(graph, node, x, starts, ends, axes, [int(s) for s in steps.reshape(-1)])
    if any(s < -1 and -x.rank <= a < x.rank and x.shape[a % x.rank] is None for s, a in zip(starts, axes)):
        return [_last_rows(graph, node, x, out, starts, ends, axes)]
    return [_constant_slice(graph, node, x, out, starts, ends, axes)]


def _constant_slice(graph: Graph, node: Node, x: Tensor, out: Tensor, starts, ends, axes) -> Node:
    """Crop with 9/10/11 (or a Noop where the slice takes everything): bounds known at conversion."""
    nc_starts, nc_ends, nc_axes = [], [], []
    for start, end, axis in zip(starts, ends, axes):
        if not -x.rank <= axis < x.rank:
            raise fail(node, graph, f"axis {axis} is out of range for rank {x.rank}")
        axis %= x.rank
        start, end = _slice_bounds(node, graph, x.shape[axis], start, end)
        if axis == x.batch_axis or (x.shape[axis] is not None and (start, end) == (0, x.shape[axis])):
            continue        # the whole axis (the batch axis has extent 1, so any non-empty slice is whole)
        nc_starts.append(start)
        nc_ends.append(end)
        nc_axes.append(x.ncnn_axis(axis))
    if not nc_axes:
        return layer(node, graph, "Noop", [x.name], [out.name])
    return layer(node, graph, "Crop", [x.name], [out.name], {9: nc_starts, 10: nc_ends, 11: nc_axes})


def _last_rows(graph: Graph, node: Node, x: Tensor, out: Tensor, starts, ends, axes) -> Node:
    """x[-n:] on an axis of run-time extent L (a sliding-window cache keeps its last rows): ONNX
    starts at max(L - n, 0); a Crop expression says so."""
    terms = {"starts": [], "ends": [], "axes": []}
    for start, end, axis in zip(starts, ends, axes):
        axis %= x.rank
        if start < -1 and x.shape[axis] is None:
            start = op("max", op("+", Ref(x.name, axis), start), 0)
        terms["starts"].append(start)
        terms["ends"].append(min(end, INT32_MAX))
        terms["axes"].append(axis)
    node.meta[SLICE_TERMS] = terms
    return _expressed_slice(graph, node, x, out)


def _expressed_slice(graph: Graph, node: Node, x: Tensor, out: Tensor) -> Node:
    """A Slice whose starts or ends are run-time sizes (express_shapes): Crop with 19/20/21
    expressions. A run-time bound is a size, so it is taken as non-negative: ncnn then clamps an
    end to the extent as ONNX does."""
    terms = node.meta[SLICE_TERMS]
    if all(isinstance(v, int) for v in terms["starts"] + terms["ends"]):
        # bounds computed from static extents (a head's half for rotary): the plain Crop, which every
        # release reads (x86 Crop expressions failed on a packed blob in ncnn 20250503)
        return _constant_slice(graph, node, x, out, terms["starts"], terms["ends"], terms["axes"])
    renderer = Renderer(graph, x.name, node)
    starts, ends, axes = [], [], []
    for start, end, axis in zip(terms["starts"], terms["ends"], terms["axes"]):
        if not 0 <= axis < x.rank:
            raise fail(node, graph, f"axis {axis} is out of range for rank {x.rank}")
        if axis == x.batch_axis:
            continue        # extent 1: a slice that is not empty takes all of it
        if isinstance(start, int) and isinstance(end, int):
            start, end = _slice_bounds(node, graph, x.shape[axis], start, end)
        elif isinstance(start, int):
            start, _ = _slice_bounds(node, graph, x.shape[axis], start, INT32_MAX)
        elif isinstance(end, int):
            _, end = _slice_bounds(node, graph, x.shape[axis], 0, end)
        try:
            starts.append(renderer.render(start))
            ends.append(renderer.render(end))
        except ValueError as exc:
            raise fail(node, graph, str(exc)) from None
        axes.append(x.ncnn_axis(axis))
    if not axes:
        return layer(node, graph, "Noop", [x.name], [out.name])
    return layer(node, graph, "Crop", renderer.bottoms, [out.name],
                 {19: expression_list(starts), 20: expression_list(ends), 21: expression_list(axes)})


def _strided(graph: Graph, node: Node, x: Tensor, starts, ends, axes, steps) -> list[Node]:
    """Slice with steps: Python's slice rules are ONNX's; the work is in Steps and strided_slice below."""
    picks = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise fail(node, graph, "a slice step of 0 is invalid")
        if not -x.rank <= axis < x.rank:
            raise fail(node, graph, f"axis {axis} is out of range for rank {x.rank}")
        axis %= x.rank
        extent = x.shape[axis]
        if extent is None:
            raise fail(node, graph, f"a Slice with steps needs the extent of axis {axis}; give static "
                                    "input shapes with --input-shape")
        first, stop, stride = slice(start, end, step).indices(extent)
        count = len(range(first, stop, stride))
        if count == 0:
            raise fail(node, graph, f"the slice [{start}:{end}:{step}] is empty; ncnn cannot hold empty tensors")
        if axis != x.batch_axis and (count, stride) != (extent, 1):
            picks.append((x.ncnn_axis(axis), first, count, stride))
    return strided_slice(graph, node, picks)


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
            outer, inner = _product(self.shape[:axis]), _product(self.shape[axis + 1:])
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
    # one run-time extent (a sequence) is inferred by each Reshape; the sliced axes' must be known
    if shape.count(None) > 1 or any(shape[a] is None for a, _, _, _ in picks):
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


def _product(extents) -> int | None:
    """The product of extents, None when one is a run-time extent."""
    return None if None in extents else math.prod(extents)


INT32_MAX = 2**31 - 1



"""GridSample -> ncnn GridSample.

ONNX's grid (1, H_out, W_out, 2) without its batch axis is the blob ncnn reads
with permute_fusion=0: channel = output row, h = output column, w = (x, y);
the 3-D form (1, D_out, H_out, W_out, 3) likewise. Both sides unnormalize the
grid the same way for either align_corners. ncnn's sample_type numbering is
1 bilinear, 2 nearest, 3 bicubic (its operators.md swaps the first two).

Two differences are removed by rewriting the grid before the layer:
- reflection: ncnn reflects a coordinate once, onnxruntime as often as needed.
  Reflection has period 4 in normalized units for either align_corners, so the
  grid is first folded into [-2, 2), where one reflection is enough (also for
  the bicubic taps up to two pixels around the point, which ncnn reflects one
  by one).
- nearest: ncnn rounds the pixel coordinate half up, onnxruntime half to even.
  The grid is unnormalized with onnxruntime's float steps, rounded by UnaryOp
  round (nearbyint: half to even), folded by reflection periods when reflecting
  (onnxruntime reflects the rounded index), and normalized back to that pixel's
  centre, which ncnn's half-up rounding then keeps. This needs the input's sizes.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, new_tensor, require_float, spatial_input
from .elementwise import binary
from .per_sample import per_sample

SAMPLE_TYPES = {"bilinear": 1, "linear": 1, "nearest": 2, "bicubic": 3, "cubic": 3}
PADDING_MODES = {"zeros": 1, "border": 2, "reflection": 3}


@lowers("GridSample")
def grid_sample(graph: Graph, node: Node) -> list[Node]:
    samples = per_sample(graph, node, [0, 1], grid_sample)      # input and grid with a batch N > 1
    if samples is not None:
        return samples
    shape, nspatial = spatial_input(graph, node, ranks=(4, 5))
    # .get: the default changed at opset 20
    mode = node.attrs.get("mode", "bilinear" if graph.opset < 20 else "linear")
    padding = node.attrs["padding_mode"]
    align = int(node.attrs["align_corners"])
    if mode not in SAMPLE_TYPES or padding not in PADDING_MODES:
        raise fail(node, graph, f"mode {mode!r} / padding_mode {padding!r}: ncnn's GridSample has "
                                "bilinear, nearest, bicubic and zeros, border, reflection")
    _refuse_differences(graph, node, mode, padding, align, nspatial)
    grid = graph.tensors[node.inputs[1]]
    require_float(graph, node, node.inputs[:2])
    if grid.is_constant and grid.value.shape[0] == 1 and grid.value.shape[1:] == grid.shape[1:] \
            and grid.rank == nspatial + 2 and grid.shape[-1] == nspatial:
        # a constant has no batch axis: ncnn's blob is the value without its leading 1
        grid = graph.tensors[graph.add_constant(f"{grid.name}_nobatch", np.squeeze(grid.value, 0)).name]
    elif grid.rank != nspatial + 2 or grid.batch_axis != 0 or grid.shape[-1] != nspatial:
        raise fail(node, graph, f"grid '{grid.name}' {grid.shape} (batch axis {grid.batch_axis}) is not "
                                f"(1, ..., {nspatial}) with the batch on axis 0")
    if SAMPLE_TYPES[mode] == 2:
        steps = _nearest_steps(graph, node, shape, align, padding == "reflection")
    elif padding == "reflection":
        steps = [("keep",), ("add", 2.0), ("mul", 0.25), ("floor",), ("mul", -4.0), ("add_kept",)]
    else:
        steps = []
    nodes, g = _grid_chain(graph, node, grid.name, steps)
    params = {0: SAMPLE_TYPES[mode], 1: PADDING_MODES[padding], 2: align}
    return nodes + [layer(node, graph, "GridSample", [node.inputs[0], g], node.outputs[:1], params)]


def _nearest_steps(graph: Graph, node: Node, shape, align: int, reflect: bool) -> list[tuple]:
    """Grid ops that move each point onto the centre of the pixel onnxruntime picks: it rounds the
    unnormalized coordinate half to even, then reflects that pixel index."""
    sizes = list(shape[2:])[::-1]                     # w, h (, d): the grid's x, y (, z) order
    if None in sizes:
        raise fail(node, graph, "nearest sampling with run-time input sizes: ncnn rounds ties half up "
                                "and onnxruntime half to even, which the converter corrects only for "
                                "known sizes; give them with --input-shape")
    n = np.asarray(sizes, np.float64)
    if align:       # x = (g + 1) / 2 * (n - 1); back: g = x * 2 / (n - 1) - 1 (any g if n == 1)
        to_pixel = [("add", 1.0), ("mul", 0.5), ("mul", n - 1), ("round",)]
        back = [("mul", np.where(n > 1, 2.0 / np.maximum(n - 1, 1), 0.0)), ("add", -1.0)]
        period = np.maximum(2 * (n - 1), 2)
    else:           # x = ((g + 1) * n - 1) / 2; back: g = (2 x + 1) / n - 1
        to_pixel = [("add", 1.0), ("mul", n), ("add", -1.0), ("mul", 0.5), ("round",)]
        back = [("mul", 2.0), ("add", 1.0), ("div", n), ("add", -1.0)]
        period = 2 * n
    # the integer index folded by whole reflection periods into [-period/2, period/2), which ncnn
    # reflects once; the quarter keeps the floor's argument away from integers
    fold = [("keep",), ("add", period / 2 + 0.25), ("div", period), ("floor",), ("mul", -period),
            ("add_kept",)] if reflect else []
    return to_pixel + fold + back


def _grid_chain(graph: Graph, node: Node, grid: str, steps: list[tuple]) -> tuple[list[Node], str]:
    """Elementwise layers applying `steps` to the grid: (op, scalar or per-coordinate values),
    (unary op,), ("keep",) to remember the running value, ("add_kept",) to add it back."""
    t = graph.tensors[grid]
    nodes, current, kept = [], grid, None
    for k, step in enumerate(steps):
        if step[0] == "keep":
            kept = current
            continue
        out = new_tensor(graph, f"{grid}_{step[0]}", t.shape, t.batch_axis)
        suffix = f"_grid{k}"
        if step[0] in UNARY_OPS:
            nodes.append(layer(node, graph, "UnaryOp", [current], [out], {0: UNARY_OPS[step[0]]}, suffix=suffix))
        elif step[0] == "add_kept":
            nodes.append(layer(node, graph, "BinaryOp", [kept, current], [out], {0: BINARY_OPS["add"]},
                               suffix=suffix))
        elif np.ndim(step[1]) == 0:
            nodes.append(layer(node, graph, "BinaryOp", [current], [out],
                               {0: BINARY_OPS[step[0]], 1: 1, 2: float(step[1])}, suffix=suffix))
        else:
            values = np.asarray(step[1], np.float32).reshape((1,) * (t.rank - 2) + (-1,))
            const = graph.add_constant(f"{node.name}_grid{k}", values).name
            nodes.append(binary(graph, node, current, const, BINARY_OPS[step[0]], out, suffix=suffix))
        current = out
    return nodes, current


def _refuse_differences(graph: Graph, node: Node, mode: str, padding: str, align: int, nspatial: int) -> None:
    """Combinations where ncnn computes other numbers than onnxruntime (measured, see the tests)."""
    if SAMPLE_TYPES[mode] == 3 and nspatial == 3:
        raise fail(node, graph, "bicubic sampling of a 3-D (5-D ONNX) input: ncnn's GridSample has "
                                "no trilinear-cubic form")
    sizes = graph.tensors[node.inputs[0]].shape[2:]
    if SAMPLE_TYPES[mode] == 3 and padding == "reflection" and any(s is None or s < 5 for s in sizes):
        raise fail(node, graph, f"bicubic reflection on spatial sizes {list(sizes)}: ncnn reflects each "
                                "tap once, which matches onnxruntime only for known sizes of at least 5")

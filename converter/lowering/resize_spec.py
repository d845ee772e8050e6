"""Resize where the ONNX spec and onnxruntime compute different pixels: refused.

The converter matches onnxruntime; the node tests' expected numbers come from the spec's
reference implementation. Where the two part, a converted model would be wrong by one of them,
so neither is promised. They part, given scales, in three places:
- the spec's length_resized is scale * extent, a fraction when the product is not whole, where
  onnxruntime uses the whole output extent: align_corners divides by length_resized - 1, and
  pytorch_half_pixel tests length_resized > 1;
- at a length of exactly 1 pytorch_half_pixel samples at -0.5 in the spec, 0 in onnxruntime
  (only cubic's four taps see the difference);
- scales that keep every extent: onnxruntime copies the input, the spec resamples it.
"""
from __future__ import annotations

from converter.onnx_side.resize import F32, ResizeMode

from ..ir import Graph, Node
from .common import fail

READS_LENGTH = ("align_corners", "pytorch_half_pixel")


def refuse_where_spec_differs(graph: Graph, node: Node, mode: ResizeMode, axes: list, by_scales: bool) -> None:
    """`axes`: per ONNX axis, its extent (size), output extent (out), scale and whether it is resized."""
    touched = [(i, ax) for i, ax in enumerate(axes) if ax.touched]
    if mode.transform == "pytorch_half_pixel" and mode.mode == "cubic":
        for i, ax in touched:
            if ax.out == 1:
                raise fail(node, graph, f"cubic pytorch_half_pixel to an extent of 1 on axis {i}: the ONNX spec "
                                        "samples at -0.5, onnxruntime at 0")
    if not by_scales:
        return
    if touched and all(ax.size is not None and ax.out == ax.size for _, ax in touched):
        raise fail(node, graph, f"scales {[float(ax.scale) for _, ax in touched]} keep every extent: onnxruntime "
                                "copies the input, the ONNX spec resamples it; give sizes or scales of 1")
    if mode.transform not in READS_LENGTH:
        return
    for i, ax in touched:
        if ax.size is None:
            # a whole scale keeps every product whole; pytorch_half_pixel parts only at lengths in (1, 2)
            if float(ax.scale).is_integer() or (mode.transform == "pytorch_half_pixel" and ax.scale > 2):
                continue
            raise fail(node, graph, f"{mode.transform} with scale {float(ax.scale):g} on axis {i} of unknown "
                                    "extent: where scale * extent is not whole the ONNX spec and onnxruntime "
                                    "compute different pixels; give the extent with --input-shape or sizes")
        length = F32(ax.size) * F32(ax.scale)
        if length == ax.out or (mode.transform == "pytorch_half_pixel" and ax.out > 1):
            continue
        raise fail(node, graph, f"{mode.transform} with scale {float(ax.scale):g} on axis {i}: the ONNX spec "
                                f"resizes to a length of {float(length):g} where onnxruntime uses {ax.out}, and "
                                "the two compute different pixels; give sizes instead of scales")

"""ONNX Resize / Upsample -> ncnn Interp, only where Interp computes the same numbers.

ncnn's Interp (measured on the pip runtime; the interpreter's kernel follows it):
- nearest: source index int(dx * step), clamped to the last pixel; step is 1/scale in
  float32 when scales are given, in/out when the output size is;
- bilinear/bicubic: source coordinate (dx + 0.5) * step - 0.5 (ONNX half_pixel), or
  dx * (in - 1) / (out - 1) with align_corner; edges clamp; bicubic uses a = -0.75.
So an ONNX nearest mode is accepted when its index map equals ncnn's for every output
pixel up to CHECKED_EXTENT (the maps depend on the scale, not on the input size, for the
modes accepted); linear needs half_pixel / pytorch_half_pixel / align_corners; cubic
needs half_pixel with a = -0.75 and exclude_outside 0. Everything else is refused.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import spatial_input
from .common import fail, layer, optional_constant

NEAREST, BILINEAR, BICUBIC = 1, 2, 3
CHECKED_EXTENT = 1 << 15
F32 = np.float32
# the nearest modes whose index map does not depend on the input size
SIZE_FREE_NEAREST = {"asymmetric", "half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nearest"}
LINEAR_MODES = {"half_pixel": 0, "pytorch_half_pixel": 0, "align_corners": 1}


def _onnx_nearest_index(dx: np.ndarray, scale: Fraction, ctm: str, nearest_mode: str) -> np.ndarray:
    """ONNX's source index for output pixels dx, exactly (rational arithmetic, then rounding)."""
    num, den = scale.numerator, scale.denominator     # x_original = f(dx) with /scale = *den/num
    if ctm == "asymmetric":
        twice = 2 * dx * den, 2 * num                        # x = dx / scale, as a fraction p/q
    elif ctm == "tf_half_pixel_for_nearest":
        twice = (2 * dx + 1) * den, 2 * num                  # (dx + 0.5) / scale
    else:                                                    # (dx + 0.5) / scale - 0.5
        twice = (2 * dx + 1) * den - num, 2 * num
    p, q = twice
    floor = np.floor_divide(p, q)
    exact = p % q == 0
    half = 2 * (p % q) == q
    if nearest_mode == "floor":
        return floor
    if nearest_mode == "ceil":
        return np.where(exact, floor, floor + 1)
    above_half = 2 * (p % q) > q
    if nearest_mode == "round_prefer_ceil":
        return np.where(above_half | half, floor + 1, floor)
    return np.where(above_half, floor + 1, floor)            # round_prefer_floor


def _ncnn_nearest_index(dx: np.ndarray, scale: Fraction) -> np.ndarray:
    step = F32(1) / F32(float(scale))
    return (dx.astype(F32) * step).astype(np.int64)


def _nearest_matches(scale: Fraction, ctm: str, nearest_mode: str) -> bool:
    dx = np.arange(CHECKED_EXTENT, dtype=np.int64)
    ours = _ncnn_nearest_index(dx, scale)
    theirs = np.maximum(_onnx_nearest_index(dx, scale, ctm, nearest_mode), 0)
    return bool(np.array_equal(ours, theirs))


def _scales_and_sizes(graph: Graph, node: Node) -> tuple[np.ndarray | None, np.ndarray | None]:
    if node.op == "Upsample":
        scales = node.attrs.get("scales")
        if scales is None:
            scales = optional_constant(graph, node, 1, "scales")
        return np.asarray(scales, dtype=np.float64), None
    if graph.opset < 11 and len(node.inputs) > 1:            # Resize-10: (X, scales)
        return np.asarray(optional_constant(graph, node, 1, "scales"), dtype=np.float64), None
    scales = optional_constant(graph, node, 2, "scales")
    sizes = optional_constant(graph, node, 3, "sizes")
    if scales is not None and scales.size == 0:
        scales = None
    return (None if scales is None else scales.astype(np.float64)), sizes


def _check_attrs(graph: Graph, node: Node) -> None:
    if node.attrs.get("axes") is not None:
        axes = sorted(int(a) % 4 for a in node.attrs["axes"])
        if axes != [2, 3]:
            raise fail(node, graph, f"Resize on axes {axes}: ncnn's Interp resizes H and W only")
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        raise fail(node, graph, f"keep_aspect_ratio_policy '{policy}' is not supported; only 'stretch'")
    if node.attrs.get("antialias", 0):
        raise fail(node, graph, "antialias resize has no ncnn Interp equivalent")


def _spatial_factors(graph: Graph, node: Node, values: np.ndarray, what: str) -> list:
    values = np.asarray(values).reshape(-1)
    if node.attrs.get("axes") is not None and len(values) == 2:
        return list(values)
    if len(values) != 4:
        raise fail(node, graph, f"{what} {values.tolist()} must have 4 entries (N, C, H, W)")
    if what == "scales" and (values[0] != 1 or values[1] != 1):
        raise fail(node, graph, f"scales {values.tolist()} resize the batch or channel axis; ncnn's "
                                "Interp resizes H and W only")
    return list(values[2:])


@lowers("Resize", "Upsample")
def resize(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node, ranks=(4,))
    _check_attrs(graph, node)
    mode = node.attrs.get("mode", "nearest")
    ctm = node.attrs.get("coordinate_transformation_mode", "half_pixel" if node.op == "Resize" else "asymmetric")
    if node.op == "Upsample" or graph.opset < 11:
        ctm = "asymmetric"                                   # the only mode before opset 11
    scales, sizes = _scales_and_sizes(graph, node)
    params: dict[int, object] = {}
    if sizes is not None:
        out_h, out_w = (int(v) for v in _spatial_factors(graph, node, sizes, "sizes"))
        in_h, in_w = shape[2], shape[3]
        if in_h is None or in_w is None:
            raise fail(node, graph, "Resize to fixed sizes from a dynamic input: the ratio ONNX uses is "
                                    "not known; give static input shapes with --input-shape")
        if sizes.reshape(-1)[:2].tolist() != [shape[0], shape[1]] and len(sizes.reshape(-1)) == 4:
            raise fail(node, graph, f"sizes {sizes.tolist()} change the batch or channel extent")
        factors = [Fraction(out_h, in_h), Fraction(out_w, in_w)]
        params.update({3: out_h, 4: out_w})
    elif scales is not None:
        sh, sw = _spatial_factors(graph, node, scales, "scales")
        if sh <= 0 or sw <= 0:
            raise fail(node, graph, f"scales {scales.tolist()} must be positive")
        factors = [Fraction(float(F32(sh))), Fraction(float(F32(sw)))]
        params.update({1: float(sh), 2: float(sw)})
    else:
        raise fail(node, graph, "Resize needs constant scales or sizes (sizes computed at run time are "
                                "not supported yet)")
    if mode == "nearest":
        nearest_mode = node.attrs.get("nearest_mode", "round_prefer_floor")
        if ctm not in SIZE_FREE_NEAREST or not all(_nearest_matches(f, ctm, nearest_mode) for f in factors):
            raise fail(node, graph, f"nearest resize with coordinate_transformation_mode '{ctm}' and "
                                    f"nearest_mode '{nearest_mode}' at scales {[float(f) for f in factors]} "
                                    "picks other pixels than ncnn's Interp (source index int(dx / scale))")
        params[0] = NEAREST
    elif mode == "linear":
        if ctm not in LINEAR_MODES:
            raise fail(node, graph, f"linear resize with coordinate_transformation_mode '{ctm}': ncnn's "
                                    "Interp computes only half_pixel and align_corners coordinates")
        params.update({0: BILINEAR, 6: LINEAR_MODES[ctm]})
    elif mode == "cubic":
        a = node.attrs.get("cubic_coeff_a", -0.75)
        if ctm != "half_pixel" or abs(a + 0.75) > 1e-6 or node.attrs.get("exclude_outside", 0):
            raise fail(node, graph, f"cubic resize with coordinate_transformation_mode '{ctm}', "
                                    f"cubic_coeff_a {a}: ncnn's Interp computes only half_pixel with "
                                    "a = -0.75 and exclude_outside 0")
        params[0] = BICUBIC
    else:
        raise fail(node, graph, f"Resize mode '{mode}' is not supported")
    if ctm == "pytorch_half_pixel" and 1 in _output_extents(graph, node):
        raise fail(node, graph, "pytorch_half_pixel with an output extent of 1 samples pixel 0, "
                                "ncnn's Interp the middle")
    return [layer(node, graph, "Interp", [node.inputs[0]], [node.outputs[0]], params)]


def _output_extents(graph: Graph, node: Node) -> list:
    out = graph.tensors[node.outputs[0]].shape
    return [] if out is None else [d for d in out[2:]]

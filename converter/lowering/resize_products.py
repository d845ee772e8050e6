"""A Resize no Interp params reproduce, as constant matrix products along its resized axes.

Along one axis onnxruntime applies a fixed (out, size) matrix (`converter.onnx_side.resize`): for
nearest a one-hot row per output pixel, for linear/cubic its taps and weights. Where ncnn's
Interp picks other pixels (asymmetric + floor at 80 -> 24: onnxruntime takes floor(9 / 0.3f)
= 29, Interp and torch floor(9 * 80 / 24) = 30; no float step gives both 10 at x = 3 and 29 at
x = 9), the matrix itself is applied: MatMul(x, M_w^T) for the last axis, MatMul(M_h, x) for the
one before. A nearest row sums one input value and exact zeros, so the pixels are copied bit
for bit while the input is finite (0 * inf is NaN: an inf spreads NaN along its row).

Where onnxruntime's matrix is not the ONNX spec's (the reference implementation's, which the
node tests' numbers come from): onnxruntime is this project's reference, so a nearest Resize
runs onnxruntime's one-hot rows and a one-line warning names the node and the first output pixel
where the spec reads another one (at 80 -> 24 above the spec, float64, and torch read pixel 30,
onnxruntime's float32 division 29). Linear and cubic weights that differ are still refused.

Needs known extents on the resized axes, the last two ONNX axes only; the matrices are capped
at MAX_MATRIX elements (the product costs size multiply-adds per output value).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from converter.onnx_side.resize import ResizeMode, Unmodelled
from converter.onnx_side.resize import axis_matrix as onnx_matrix
from converter.shapes.batch_axis import follow_batch_axis

from ..ir import Graph, Node, Tensor
from . import LOWERINGS
from .common import fail

MAX_MATRIX = 1 << 20


def resize_by_products(graph: Graph, node: Node, mode: ResizeMode, axes, by_sizes: bool) -> list[Node] | None:
    """The MatMul layers computing onnxruntime's resize, or None where this form does not apply;
    warned (nearest) or refused (other modes) where the ONNX spec computes other numbers."""
    x = graph.tensors[node.inputs[0]]
    rank = len(axes)
    touched = [i for i, ax in enumerate(axes) if ax.touched]
    if not touched or any(i < rank - 2 or i == x.batch_axis or axes[i].size is None
                          or not axes[i].out or axes[i].size * axes[i].out > MAX_MATRIX for i in touched):
        return None
    try:
        matrices = {i: onnx_matrix(mode, axes[i].size, axes[i].out, axes[i].scale).astype(np.float32)
                    for i in touched}
    except Unmodelled:
        return None
    for i in touched:
        _check_against_spec(graph, node, mode, i, axes[i], matrices[i], by_sizes)
    layers, current, shape = [], x.name, list(x.shape)
    for k, i in enumerate(sorted(touched, key=lambda i: axes[i].out / axes[i].size)):   # shrink first
        last = k == len(touched) - 1
        shape[i] = axes[i].out
        out = node.outputs[0] if last else graph.fresh_name(f"{node.outputs[0]}_axis{i}")
        matrix = matrices[i]
        weight = graph.add_constant(f"{out}_resize_matrix", matrix.T.copy() if i == rank - 1 else matrix).name
        inputs = [current, weight] if i == rank - 1 else [weight, current]
        step = Node(f"{node.name}_axis{i}", "MatMul", inputs, [out], {}, origin=node.origin or node.name)
        if not last:
            follow_batch_axis(graph, step, graph.add_tensor(Tensor(out, tuple(shape), x.dtype)))
        layers += LOWERINGS["MatMul"](graph, step)
        current = out
    return layers


def _check_against_spec(graph: Graph, node: Node, mode: ResizeMode, i: int, ax, ort: np.ndarray,
                        by_sizes: bool) -> None:
    """Compare onnxruntime's matrix along axis i with the spec's (its reference implementation
    resizing the identity): nearest sources that differ are a warning, other weights a refusal."""
    spec = _spec_matrix(mode, ax, by_sizes)
    if spec.shape == ort.shape and np.allclose(spec, ort, rtol=1e-5, atol=1e-6):
        return
    row = int(np.argmax(np.abs(spec - ort).max(axis=1))) if spec.shape == ort.shape else 0
    what = (f"mode {mode.mode}, coordinate_transformation_mode {mode.transform} resizing axis {i} "
            f"{ax.size} -> {ax.out}")
    if mode.mode == "nearest" and spec.shape == ort.shape:
        graph.warnings.append(f"{node.describe()}: {what}: converted to onnxruntime's pixels; output {row} reads "
                              f"pixel {int(np.argmax(ort[row]))} in onnxruntime, {int(np.argmax(spec[row]))} in "
                              "the ONNX spec (and torch)")
        return
    raise fail(node, graph, f"{what}: onnxruntime and the ONNX spec compute different pixels "
                            f"(the weights of output {row} differ); neither is promised")


def _spec_matrix(mode: ResizeMode, ax, by_sizes: bool) -> np.ndarray:
    attrs = dict(mode=mode.mode, coordinate_transformation_mode=mode.transform, nearest_mode=mode.nearest_mode,
                 cubic_coeff_a=mode.cubic_coeff_a, exclude_outside=int(mode.exclude_outside))
    given = ("sizes", np.array([ax.size, ax.out], np.int64)) if by_sizes else \
        ("scales", np.array([1, ax.scale], np.float32))
    inputs = ["x", "", "", "sizes"] if by_sizes else ["x", "", "scales"]
    resize = helper.make_node("Resize", inputs, ["y"], **attrs)
    model = helper.make_model(helper.make_graph(
        [resize], "axis", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ax.size, ax.size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor(given[0], TensorProto.INT64 if by_sizes else TensorProto.FLOAT, [2], given[1])]),
        opset_imports=[helper.make_opsetid("", 19)])
    identity = np.eye(ax.size, dtype=np.float32)
    return ReferenceEvaluator(model).run(None, {"x": identity})[0].T       # rows: outputs, columns: sources

"""Cast and Gather (constant indices) on run-time tensors -> ncnn Noop / UnaryOp / Crop / Reshape.

ncnn blobs are float32, so a Cast between float types, or from an integer type to a
float, changes nothing ncnn computes (integers up to 2**24 are exact floats). A cast to
an integer type truncates toward zero, which is UnaryOp trunc. Casts to bool have no
ncnn form. Gather with constant indices picks slices: one index is a Crop plus a Reshape
that drops the axis; several are Crops joined by a Concat (a run of consecutive indices
is one Crop).
"""
from __future__ import annotations

import numpy as np
import onnx

from ..ir import Graph, Node
from ..ncnn_layers import UNARY_OPS
from . import lowers
from .common import constant, fail, layer, ncnn_axis, new_tensor
from .tensor_ops import reshape_layer

MAX_GATHER_PIECES = 16


@lowers("Cast")
def cast(graph: Graph, node: Node) -> list[Node]:
    x, out = node.inputs[0], node.outputs[0]
    to = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(node.attrs["to"])))
    source = graph.tensors[x].dtype
    if to.kind == "b" or source.kind == "b":
        raise fail(node, graph, f"Cast from {source} to {to}: ncnn has no boolean tensors")
    if to.kind == "f" or source.kind in "iu":
        return [layer(node, graph, "Noop", [x], [out])]
    # float -> integer: ONNX truncates toward zero
    return [layer(node, graph, "UnaryOp", [x], [out], {0: UNARY_OPS["trunc"]})]


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of indices as (start, end) ranges, in order."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


@lowers("Gather")
def gather(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    if x.is_constant:
        raise fail(node, graph, "a constant table read at run-time indices (an embedding) is not supported")
    indices = constant(graph, node, 1, "the indices")
    if indices.ndim > 1:
        raise fail(node, graph, f"indices of shape {list(indices.shape)}: only a scalar or a list is supported")
    axis = int(node.attrs.get("axis", 0))
    axis = axis + x.rank if axis < 0 else axis
    nc_axis = ncnn_axis(graph, node, x.name, axis)
    extent = x.shape[axis]
    picked = []
    for i in (int(v) for v in indices.reshape(-1)):
        if i < 0:
            if extent is None:
                raise fail(node, graph, f"index {i} on an axis of unknown extent")
            i += extent
        if i < 0 or (extent is not None and i >= extent):
            raise fail(node, graph, f"index {i} is out of range for extent {extent}")
        picked.append(i)
    runs = _runs(picked)
    if len(runs) > MAX_GATHER_PIECES:
        raise fail(node, graph, f"{len(runs)} separate index ranges; at most {MAX_GATHER_PIECES} are lowered")
    scalar = indices.ndim == 0
    gathered = out.name if not scalar else new_tensor(
        graph, f"{out.name}_kept", tuple(1 if a == axis else d for a, d in enumerate(x.shape)), x.batch_axis)
    layers, pieces = [], []
    for k, (start, end) in enumerate(runs):
        piece = gathered if len(runs) == 1 else new_tensor(
            graph, f"{out.name}_{k}", tuple(end - start if a == axis else d for a, d in enumerate(x.shape)),
            x.batch_axis)
        layers.append(layer(node, graph, "Crop", [x.name], [piece], {9: [start], 10: [end], 11: [nc_axis]},
                            suffix=f"_crop{k}"))
        pieces.append(piece)
    if len(runs) > 1:
        layers.append(layer(node, graph, "Concat", pieces, [gathered], {0: nc_axis}))
    if scalar:     # drop the gathered axis
        kept = [a for a in range(x.rank) if a != axis]
        pairs = {o: i for o, i in enumerate(kept)}
        from .tensor_ops import ncnn_pairs
        layers.append(reshape_layer(graph, node, gathered, out.name,
                                    ncnn_pairs(graph.tensors[gathered], out, pairs), suffix="_squeeze"))
    return layers

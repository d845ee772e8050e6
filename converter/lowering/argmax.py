"""ArgMax / ArgMin -> a Reduction, UnaryOp and BinaryOp composition (ncnn's ArgMax cannot serve).

ncnn's ArgMax layer is left out of default builds (ArgMax OFF in
src/CMakeLists.txt; the pip runtime has none) and takes the top-k over the
whole blob, never along one axis. Instead, along the axis:

    peak = max(x)                 (min for ArgMin)
    off  = sign(peak - x)         0 where x equals the peak, else 1 (exact in float)
    key  = i + N * off            first index: smallest key among the peaks
    key  = i - N * off            last index (select_last_index): largest key
    index = min(key) / max(key)

Every value is an integer below 2 * N, exact in float32 up to N = 2**23.
The ncnn blob holds the indices as float; ONNX's int64 is `astype(int64)` away.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .cnn import require_float
from .common import fail
from .normalization_extra import REDUCE_MAX, Chain, _ncnn_axes

REDUCE_MIN = 5
MAX_EXACT_EXTENT = 2**23      # i + N * off stays an exact float32 integer


@lowers("ArgMax", "ArgMin")
def arg_extreme(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].dtype.kind not in "iu":     # integers compare exactly below 2**24
        require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    axis = int(node.attrs.get("axis", 0))
    chain = Chain(graph, node, _ncnn_axes(graph, node, [axis]))
    extent = x.shape[axis % x.rank]
    if extent is None:
        raise fail(node, graph, f"the extent of axis {axis} is unknown; give static input shapes")
    if extent > MAX_EXACT_EXTENT:
        raise fail(node, graph, f"axis {axis} has {extent} entries; float32 indices are exact up to "
                                f"{MAX_EXACT_EXTENT}")
    last = bool(node.attrs.get("select_last_index", 0))
    peak = chain.reduce(x.name, REDUCE_MAX if node.op == "ArgMax" else REDUCE_MIN, "_peak")
    # peak - x for ArgMax, x - peak for ArgMin: both >= 0, and 0 exactly at the peaks
    gap = chain.binary(x.name, peak, "rsub" if node.op == "ArgMax" else "sub", "_gap")
    off = chain.unary(gap, "sign", False, "_off")
    penalty = chain.scalar(off, "mul", float(-extent if last else extent), False, "_penalty")
    index_shape = [1] * x.rank
    index_shape[axis % x.rank] = extent
    positions = graph.add_constant(f"{node.name}_positions",
                                   np.arange(extent, dtype=np.float32).reshape(index_shape)).name
    key = chain.binary(penalty, positions, "add", "_key")
    keepdims = int(node.attrs.get("keepdims", 1))
    chain.reduce(key, REDUCE_MAX if last else REDUCE_MIN, "", out=node.outputs[0], keepdims=keepdims)
    return chain.layers

"""ONNX reductions -> ncnn Reduction; ArgMax / ArgMin -> a Reduction, UnaryOp and BinaryOp chain.

ncnn's ArgMax layer is left out of default builds (ArgMax OFF in
src/CMakeLists.txt; the pip runtime has none) and takes the top-k over the
whole blob, never along one axis. Instead, along the axis:

    peak = max(x)                 (min for ArgMin)
    off  = sign(peak - x)         0 where x equals the peak, else 1 (exact in float)
    key  = i + N * off            first index: smallest key among the peaks
    key  = i - N * off            last index (select_last_index): largest key
    index = min(key) / max(key)

Every value is an integer below 2 * N, exact in float32 up to N = 2**23. At an extent known
only at run time, N is 2**23 and the positions are built at run time (runtime_positions.py).
The ncnn blob holds the indices as float; ONNX's int64 is `astype(int64)` away.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import REDUCTION_OPS
from converter.op_groups import REDUCE

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import Chain, fail, layer, ncnn_axes, ncnn_pairs, require_float, reshape_layer
from .reshape import onnx_axes
from .runtime_positions import runtime_positions

# ONNX reduction -> ncnn Reduction operation; TRANSFORMS change values even when no axis is
# reduced, so dropping an extent-1 axis from the list is not enough
REDUCTIONS = {"ReduceSum": "sum", "ReduceL1": "asum", "ReduceSumSquare": "sumsq", "ReduceMean": "mean",
              "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod", "ReduceL2": "l2",
              "ReduceLogSum": "logsum", "ReduceLogSumExp": "logsumexp"}
assert REDUCTIONS.keys() == REDUCE

TRANSFORMS = {"ReduceL1", "ReduceSumSquare", "ReduceL2", "ReduceLogSum"}


@lowers(*REDUCE)
def reduce(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or out.shape is None:
        raise fail(node, graph, "the input or output rank is unknown")
    keepdims = int(node.attrs["keepdims"])
    axes = onnx_axes(graph, node, x.rank) if x.rank else []
    # .get: ReduceMean/Max/... gain noop_with_empty_axes only at opset 18
    if not axes and node.attrs.get("noop_with_empty_axes", 0):
        if node.op in TRANSFORMS:
            raise fail(node, graph, "noop_with_empty_axes on an op that transforms values is not supported")
        return [layer(node, graph, "Noop", [x.name], [out.name])]
    axes = axes or list(range(x.rank))
    kept = [i for i in range(x.rank) if i not in axes]
    # out ncnn axis -> x ncnn axis it keeps
    pairs = ncnn_pairs(x, out, {i: i for i in kept} if keepdims else dict(enumerate(kept)))
    # the batch axis has extent 1: reducing it changes no value, only (with keepdims) the rank
    nc_axes = sorted({x.ncnn_axis(a) for a in axes} - {None})
    if not nc_axes:
        if node.op in TRANSFORMS:
            raise fail(node, graph, "reducing only the batch axis with an op that transforms values "
                                    "is not supported")
        return [reshape_layer(graph, node, x.name, out.name, pairs)]
    params = {0: REDUCTION_OPS[REDUCTIONS[node.op]], 1: 0, 3: nc_axes, 4: keepdims, 5: 1}
    nc_kept = [i for i in range(len(x.ncnn_shape)) if i not in nc_axes]
    if keepdims:
        produced = tuple(1 if i in nc_axes else d for i, d in enumerate(x.ncnn_shape))
    else:
        produced = tuple(x.ncnn_shape[i] for i in nc_kept) or (1,)
    if len(produced) == len(out.ncnn_shape):
        return [layer(node, graph, "Reduction", [x.name], [out.name], params)]
    # keepdims kept an extent-1 batch axis that ncnn has not got: add it back with a Reshape
    tmp = graph.fresh_name(f"{out.name}_reduced")
    graph.add_tensor(Tensor(tmp, produced, out.dtype))
    position = {a: p for p, a in enumerate(range(len(x.ncnn_shape)) if keepdims else nc_kept)}
    tmp_pairs = {o: position[a] for o, a in pairs.items() if a in position}
    return [layer(node, graph, "Reduction", [x.name], [tmp], params),
            reshape_layer(graph, node, tmp, out.name, tmp_pairs, suffix="_rank")]




MAX_EXACT_EXTENT = 2**23      # i + N * off stays an exact float32 integer


@lowers("ArgMax", "ArgMin")
def arg_extreme(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].dtype.kind not in "iu":     # integers compare exactly below 2**24
        require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    axis = int(node.attrs["axis"])
    chain = Chain(graph, node, ncnn_axes(graph, node, [axis]))
    extent = x.shape[axis % x.rank]
    if extent is not None and extent > MAX_EXACT_EXTENT:
        raise fail(node, graph, f"axis {axis} has {extent} entries; float32 indices are exact up to "
                                f"{MAX_EXACT_EXTENT}")
    last = bool(node.attrs["select_last_index"])
    peak = chain.reduce(x.name, "max" if node.op == "ArgMax" else "min", "_peak")
    # peak - x for ArgMax, x - peak for ArgMin: both >= 0, and 0 exactly at the peaks
    gap = chain.binary(x.name, peak, "rsub" if node.op == "ArgMax" else "sub", "_gap")
    off = chain.unary(gap, "sign", False, "_off")
    # at a run-time extent N is unknown: any N above every index will do, and 2**23 keeps keys exact
    spread = extent if extent is not None else MAX_EXACT_EXTENT
    penalty = chain.scalar(off, "mul", float(-spread if last else spread), False, "_penalty")
    index_shape = [1] * x.rank
    index_shape[axis % x.rank] = extent
    if extent is None:
        made, positions = runtime_positions(graph, node, x.name, axis % x.rank, tuple(index_shape),
                                            x.batch_axis, f"{node.name}_positions")
        chain.layers += made
    else:
        positions = graph.add_constant(f"{node.name}_positions",
                                       np.arange(extent, dtype=np.float32).reshape(index_shape)).name
    key = chain.binary(penalty, positions, "add", "_key")
    keepdims = int(node.attrs["keepdims"])
    chain.reduce(key, "max" if last else "min", "", out=node.outputs[0], keepdims=keepdims)
    return chain.layers



"""Shape and data-movement ONNX ops -> ncnn Reshape / Permute / Slice / Crop / Reduction.

Everything here works in ncnn coordinates: the ONNX axes without the tensor's
batch axis, numpy order (c, d, h, w). The output tensor's shape and batch
axis (from shape inference and batch_axis.py) decide the ncnn target; a
Reshape is written with explicit extents where they are known and with
ncnn's copy (0) / infer (-1) codes where they are not.
"""
from __future__ import annotations

import numpy as np

from ..ncnn_axes import AXIS_NAMES, reshape_params, same_named

from ..expression import Expr, expression_list
from ..ir import Graph, Node, Shape, Tensor
from ..symbolic import Renderer
from . import lowers
from .common import depends_on, constant, fail, layer, ncnn_axis, optional_constant
from .slice_step import strided_slice

INT32_MAX = 2**31 - 1


def unchanged(source: Shape, target: Shape, pairs: dict[int, int]) -> bool:
    """True when a Reshape from ncnn shape `source` to `target` would change nothing."""
    return len(source) == len(target) and all(
        (t is not None and t == s) or pairs.get(i) == i for i, (s, t) in enumerate(zip(source, target)))


def ncnn_pairs(x: Tensor, out: Tensor, onnx_pairs: dict[int, int]) -> dict[int, int]:
    """ONNX (out axis -> input axis) correspondences in ncnn coordinates; batch axes drop out."""
    result = {}
    for o, i in onnx_pairs.items():
        a, b = out.ncnn_axis(o), x.ncnn_axis(i)
        if a is not None and b is not None:
            result[a] = b
    return result


def reshape_layer(graph: Graph, src: Node, x: str, out: str, pairs: dict[int, int],
                  target: Shape | None = None, suffix: str = "") -> Node:
    """A Reshape (or Noop) from tensor x to tensor out; `pairs` in ncnn axes, `target` overrides out's ncnn shape."""
    source = graph.tensors[x].ncnn_shape
    target = graph.tensors[out].ncnn_shape if target is None else target
    for name, shape in ((x, source), (out, target)):
        if shape is None:
            raise fail(src, graph, f"the rank of '{name}' is unknown")
        if len(shape) > 4:
            raise fail(src, graph, f"'{name}' would need {len(shape)} ncnn axes; ncnn holds at most 4")
    try:
        params = None if unchanged(source, target, pairs) else reshape_params(
            target, same_named(len(source), len(target), pairs))
    except ValueError as exc:
        params = _self_referencing_shape(source, target, pairs)
        if params is None:
            raise fail(src, graph, f"{exc}; give static input shapes with --input-shape") from None
    if params is None:
        return layer(src, graph, "Noop", [x], [out], suffix=suffix)
    return layer(src, graph, "Reshape", [x], [out], params, suffix=suffix)


def _self_referencing_shape(source: Shape, target: Shape, pairs: dict[int, int]) -> dict[int, str] | None:
    """Reshape 6= naming the input's own extents, for unknown extents that move to an axis of
    another name (copy codes only copy in place); one extent left unknown is inferred (-1)."""
    terms, inferred = [], False
    for i, extent in enumerate(target):
        if extent is not None:
            terms.append(Expr.const(int(extent)))
        elif i in pairs:
            terms.append(Expr.ref(0, axis_name(len(source), pairs[i])))
        elif not inferred:
            terms.append(Expr.const(-1))
            inferred = True
        else:
            return None
    return {6: expression_list(list(reversed(terms)))}


def _shape_input(graph: Graph, node: Node) -> list[int]:
    return [int(v) for v in constant(graph, node, 1, "the target shape").reshape(-1)]


def _reshape_target(x: Tensor, out: Tensor, codes: list[int]) -> Shape:
    """The output ONNX shape: shape inference's, with gaps filled from the shape codes."""
    mine: list = [x.shape[i] if c == 0 and x.shape and i < len(x.shape) else (c if c > 0 else None)
                  for i, c in enumerate(codes)]
    if -1 in codes and x.shape is not None and None not in x.shape and None not in [
            d for d, c in zip(mine, codes) if c != -1]:
        rest = int(np.prod([d for d, c in zip(mine, codes) if c != -1]))
        mine[codes.index(-1)] = int(np.prod(x.shape)) // rest if rest else None
    if out.shape is None or len(out.shape) != len(codes):
        return tuple(mine)
    return tuple(o if o is not None else m for o, m in zip(out.shape, mine))


def expressed_reshape(graph: Graph, node: Node, terms: list, x_name: str | None = None,
                      out_name: str | None = None) -> Node:
    """A Reshape whose target (ONNX order, as symbolic terms) is known only at run time: ncnn's
    6=shape_expr, innermost extent first, without the batch axis; referenced tensors become
    extra bottoms."""
    x = graph.tensors[x_name or node.inputs[0]]
    out = graph.tensors[out_name or node.outputs[0]]
    if out.batch_axis is not None and terms[out.batch_axis] != 1:
        raise fail(node, graph, f"the target's batch axis {out.batch_axis} is not 1 at conversion time")
    kept = [t for i, t in enumerate(terms) if i != out.batch_axis] or [1]
    if len(kept) > 4:
        raise fail(node, graph, f"the target has {len(kept)} axes without the batch axis; ncnn holds at most 4")
    renderer = Renderer(graph, x.name, node)
    try:
        expr = expression_list([renderer.render(t) for t in reversed(kept)])
    except ValueError as exc:
        raise fail(node, graph, str(exc)) from None
    return layer(node, graph, "Reshape", renderer.bottoms, [out.name], {6: expr})


@lowers("Reshape")
def reshape(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if "_shape_terms" in node.attrs:
        return [expressed_reshape(graph, node, node.attrs["_shape_terms"])]
    codes = _shape_input(graph, node)
    if node.attrs.get("allowzero", 0) and 0 in codes:
        raise fail(node, graph, f"shape {codes} with allowzero=1 makes an empty tensor, which ncnn cannot hold")
    target = Tensor("", _reshape_target(x, out, codes), batch_axis=out.batch_axis).ncnn_shape
    pairs = ncnn_pairs(x, out, {i: i for i, c in enumerate(codes) if c == 0})
    return [reshape_layer(graph, node, x.name, out.name, pairs, target)]


def _raw_axes(graph: Graph, node: Node) -> list[int] | None:
    """`axes` from the attribute (older opsets) or input 1 (opset 13+)."""
    axes = node.attrs.get("axes")
    if axes is None:
        value = optional_constant(graph, node, 1, "axes")
        axes = None if value is None else value.reshape(-1)
    return None if axes is None else [int(a) for a in axes]


def _axes(graph: Graph, node: Node, rank: int) -> list[int] | None:
    """The axes normalized against `rank` and sorted."""
    axes = _raw_axes(graph, node)
    if axes is None:
        return None
    for a in axes:
        if not -rank <= a < rank:
            raise fail(node, graph, f"axis {a} is out of range for rank {rank}")
    return sorted({a % rank for a in axes})


@lowers("Squeeze")
def squeeze(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    axes = _axes(graph, node, x.rank)
    if axes is None:
        if None in x.shape:
            raise fail(node, graph, "Squeeze without axes on a tensor with unknown extents: which axes "
                                    "are 1 is not known; give axes or static input shapes")
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    kept = [i for i in range(x.rank) if i not in axes]
    target = Tensor("", tuple(x.shape[i] for i in kept), batch_axis=out.batch_axis).ncnn_shape
    pairs = ncnn_pairs(x, out, dict(enumerate(kept)))
    return [reshape_layer(graph, node, x.name, out.name, pairs, target)]


@lowers("Unsqueeze")
def unsqueeze(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    raw = _raw_axes(graph, node)
    if raw is None:
        raise fail(node, graph, "Unsqueeze needs axes")
    rank = x.rank + len(raw)
    axes = _axes(graph, node, rank)
    kept = [i for i in range(rank) if i not in axes]
    shape = [1] * rank
    for o, i in zip(kept, range(x.rank)):
        shape[o] = x.shape[i]
    target = Tensor("", tuple(shape), batch_axis=out.batch_axis).ncnn_shape
    pairs = ncnn_pairs(x, out, {o: i for i, o in enumerate(kept)})
    return [reshape_layer(graph, node, x.name, out.name, pairs, target)]


# ---- Transpose -----------------------------------------------------------
# ncnn Permute order_type enumerations: each entry names, innermost output axis
# first, the input axis that output axis takes (permute.cpp's comments).
PERMUTE_ORDERS = {
    2: ("wh", "hw"),
    3: ("whc", "hwc", "wch", "cwh", "hcw", "chw"),
    4: ("whdc", "hwdc", "wdhc", "dwhc", "hdwc", "dhwc", "whcd", "hwcd", "wchd", "cwhd", "hcwd", "chwd",
        "wdch", "dwch", "wcdh", "cwdh", "dcwh", "cdwh", "hdcw", "dhcw", "hcdw", "chdw", "dchw", "cdhw"),
}


def _numpy_perm(rank: int, order: str) -> tuple[int, ...]:
    names = AXIS_NAMES[rank]
    return tuple(rank - 1 - names.index(n) for n in reversed(order))


ORDER_TYPE = {(rank, _numpy_perm(rank, order)): k
              for rank, orders in PERMUTE_ORDERS.items() for k, order in enumerate(orders)}


@lowers("Transpose")
def transpose(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    perm = [int(p) for p in node.attrs.get("perm") or reversed(range(x.rank))]
    if sorted(perm) != list(range(x.rank)):
        raise fail(node, graph, f"perm {perm} is not a permutation of the {x.rank} axes")
    expected = None if x.batch_axis is None else perm.index(x.batch_axis)
    if out.batch_axis != expected:
        raise fail(node, graph, f"perm {perm} moves the batch axis {x.batch_axis} to {expected}, but the "
                                f"output's batch axis is {out.batch_axis}; ncnn has no batch axis to move")
    ncnn_perm = tuple(x.ncnn_axis(p) for o, p in enumerate(perm) if o != out.batch_axis)
    if ncnn_perm == tuple(range(len(ncnn_perm))):
        return [layer(node, graph, "Noop", [x.name], [out.name])]
    if len(ncnn_perm) > 4:
        raise fail(node, graph, f"{len(ncnn_perm)} axes without the batch axis; ncnn holds at most 4")
    order = ORDER_TYPE[(len(ncnn_perm), ncnn_perm)]
    return [layer(node, graph, "Permute", [x.name], [out.name], {0: order})]


# ---- Split / Slice -------------------------------------------------------
@lowers("Split")
def split(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    axis = node.attrs.get("axis", 0)
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
    if "_slice_terms" in node.attrs:
        return [_expressed_slice(graph, node, x, out)]
    starts = [int(v) for v in constant(graph, node, 1, "starts").reshape(-1)]
    ends = [int(v) for v in constant(graph, node, 2, "ends").reshape(-1)]
    axes = optional_constant(graph, node, 3, "axes")
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes.reshape(-1)]
    steps = optional_constant(graph, node, 4, "steps")
    if steps is not None and any(int(s) != 1 for s in steps.reshape(-1)):
        return _strided(graph, node, x, starts, ends, axes, [int(s) for s in steps.reshape(-1)])
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
        return [layer(node, graph, "Noop", [x.name], [out.name])]
    return [layer(node, graph, "Crop", [x.name], [out.name], {9: nc_starts, 10: nc_ends, 11: nc_axes})]


def _expressed_slice(graph: Graph, node: Node, x: Tensor, out: Tensor) -> Node:
    """A Slice whose starts or ends are run-time sizes (express_shapes): Crop with 19/20/21
    expressions. A run-time bound is a size, so it is taken as non-negative: ncnn then clamps an
    end to the extent as ONNX does."""
    terms = node.attrs["_slice_terms"]
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
    """Slice with steps: Python's slice rules are ONNX's; the work is in slice_step.py."""
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


# ---- Reductions ----------------------------------------------------------
# ncnn Reduction operation codes (reduction.h); `transforms`: the op changes values even
# when no axis is reduced, so dropping an extent-1 axis from the list is not enough
REDUCTIONS = {"ReduceSum": 0, "ReduceL1": 1, "ReduceSumSquare": 2, "ReduceMean": 3, "ReduceMax": 4,
              "ReduceMin": 5, "ReduceProd": 6, "ReduceL2": 8, "ReduceLogSum": 9, "ReduceLogSumExp": 10}
TRANSFORMS = {"ReduceL1", "ReduceSumSquare", "ReduceL2", "ReduceLogSum"}


@lowers(*REDUCTIONS)
def reduce(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or out.shape is None:
        raise fail(node, graph, "the input or output rank is unknown")
    keepdims = int(node.attrs.get("keepdims", 1))
    axes = _axes(graph, node, x.rank) if x.rank else []
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
    params = {0: REDUCTIONS[node.op], 1: 0, 3: nc_axes, 4: keepdims, 5: 1}
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


# ---- Shape / Constant (Expand is in tile.py) ----------------------------------------------
@lowers("Shape")
def shape(graph: Graph, node: Node) -> list[Node]:
    """Shapes of known extents were folded to constants; one that is left cannot be computed in ncnn."""
    x = graph.tensors[node.inputs[0]]
    if not graph.use_count(node.outputs[0]):
        return []
    raise fail(node, graph, f"ncnn has no Shape layer and the extents {list(x.shape or [])} of '{x.name}' "
                            f"are not all known at conversion time: {depends_on(graph, x.name)}")


CONSTANT_ATTRS = {"value": None, "value_float": np.float32, "value_floats": np.float32,
                  "value_int": np.int64, "value_ints": np.int64}


@lowers("Constant")
def constant_node(graph: Graph, node: Node) -> list[Node]:
    """Normally folded; if one survives, its value becomes a constant tensor (MemoryData later)."""
    for key, dtype in CONSTANT_ATTRS.items():
        if key in node.attrs:
            value = np.asarray(node.attrs[key], dtype=dtype)
            break
    else:
        raise fail(node, graph, f"unsupported Constant attributes {sorted(node.attrs)}")
    t = graph.tensors[node.outputs[0]]
    t.value, t.shape, t.dtype, t.batch_axis = value, tuple(value.shape), value.dtype, None
    return []

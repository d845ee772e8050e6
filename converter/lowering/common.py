"""Helpers shared by lowerings: building ncnn nodes, reading constants, clear errors, Reshapes
between ncnn shapes, window geometry (pads, strides) of conv and pooling, and Reduction chains."""
from __future__ import annotations

import math
from typing import Any, Sequence

import networkx as nx
import numpy as np

from converter.ncnn_side.axes import axis_name, reshape_params, same_named
from converter.ncnn_side.expression import Expr, expression_list
from converter.ncnn_side.layers import BINARY_OPS, REDUCTION_OPS, UNARY_OPS

from ..ir import ConversionError, Graph, Node, Shape, Tensor


def fail(node: Node, graph: Graph, why: str) -> ConversionError:
    shapes = ", ".join(str(list(graph.tensors[t].shape)) if t in graph.tensors and
                       graph.tensors[t].shape is not None else "?" for t in node.inputs if t)
    return ConversionError(f"{node.op} node '{node.name}' (input shapes {shapes}): {why}")


MAX_PARAM_STRING = 255     # a longer string param (an expression) fails to load: "too long string"


def layer(src: Node, graph: Graph, type_: str, inputs: Sequence[str], outputs: Sequence[str],
          params: dict[int, Any] | None = None, weights: Sequence[np.ndarray] = (),
          suffix: str = "") -> Node:
    """A new ncnn node standing for (part of) ONNX node `src`."""
    for pid, value in (params or {}).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, float) and not np.isfinite(v) and abs(v) != np.inf for v in values):
            raise fail(src, graph, f"param {pid} of the {type_} layer is NaN; ncnn params cannot hold NaN")
        if isinstance(value, str) and len(value) > MAX_PARAM_STRING:
            raise fail(src, graph, f"param {pid} of the {type_} layer is an expression of {len(value)} characters; "
                                   f"ncnn's param reader takes at most {MAX_PARAM_STRING}")
    if any(np.size(w) == 0 for w in weights):
        raise fail(src, graph, f"an empty weight for the {type_} layer; ncnn cannot hold empty tensors")
    name = src.name + suffix
    if name in graph.nodes:
        name = graph.fresh_name(name)
    return Node(name, type_, list(inputs), list(outputs), params=dict(params or {}),
                weights=[np.asarray(w, dtype=np.float32).ravel() for w in weights],
                ncnn=True, origin=src.origin or src.name)


def new_tensor(graph: Graph, stem: str, shape: Shape | None, batch_axis: int | None) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, shape, batch_axis=batch_axis))
    return name


def tensor(graph: Graph, name: str) -> Tensor:
    return graph.tensors[name]


def constant(graph: Graph, node: Node, slot: int, what: str) -> np.ndarray:
    """The value of input `slot`, which must be a compile-time constant."""
    if slot >= len(node.inputs) or not node.inputs[slot]:
        raise fail(node, graph, f"{what} is missing")
    name = node.inputs[slot]
    value = graph.value(name)
    if value is None and name in graph.inputs:     # weights fed as an input: only their value helps
        raise fail(node, graph, f"{what} must be a constant, but '{name}' is a graph input; "
                                f"fix its value with --input-value {name}=V1,V2,...")
    if value is None:
        raise fail(node, graph, f"{what} must be a constant, but {depends_on(graph, name)}")
    return value


def optional_constant(graph: Graph, node: Node, slot: int, what: str) -> np.ndarray | None:
    if slot >= len(node.inputs) or not node.inputs[slot]:
        return None
    return constant(graph, node, slot, what)


def depends_on(graph: Graph, name: str) -> str:
    """Explain which graph inputs a non-constant tensor comes from, and how to fix it."""
    producer = graph.producer(name)
    sources = set(graph.inputs) & {name}
    if producer is not None:
        upstream = nx.ancestors(graph.wiring, producer.name) | {producer.name}
        sources |= {t for n in upstream for t in graph.nodes[n].inputs if t in graph.inputs}
    if not sources:
        return f"'{name}' is computed at run time"
    hint = " ".join(f"--input-shape {s}=DIMS" for s in sorted(sources))
    return f"'{name}' depends on the size of input(s) {', '.join(sorted(sources))}; fix it with {hint}"


def value_sources(graph: Graph, name: str) -> list[str]:
    """The graph inputs whose values (not only sizes: reads through Shape/Size stop) `name` is computed from."""
    found, seen, stack = set(), set(), [name]
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        if tensor in graph.inputs:
            found.add(tensor)
        producer = graph.producer(tensor)
        if producer is not None and producer.op not in ("Shape", "Size"):
            stack.extend(i for i in producer.inputs if i)
    return sorted(found)


def ncnn_axis(graph: Graph, node: Node, name: str, axis: int) -> int:
    """ONNX axis of tensor `name` -> ncnn (numpy-order) axis; the batch axis is refused."""
    t = graph.tensors[name]
    if t.rank is None:
        raise fail(node, graph, f"the rank of '{name}' is unknown")
    if not -t.rank <= axis < t.rank:
        raise fail(node, graph, f"axis {axis} is out of range for rank {t.rank}")
    mapped = t.ncnn_axis(axis)
    if mapped is None:
        raise fail(node, graph, f"operating along the batch axis ({axis}) is not supported by ncnn")
    return mapped


def ncnn_rank(graph: Graph, name: str) -> int:
    return len(graph.tensors[name].ncnn_shape)


def require_ncnn_rank(graph: Graph, node: Node, name: str, ranks: Sequence[int], what: str) -> int:
    t = graph.tensors[name]
    if t.shape is None:
        raise fail(node, graph, f"the rank of '{name}' is unknown")
    rank = len(t.ncnn_shape)
    if rank not in ranks:
        raise fail(node, graph, f"{what} needs a {' or '.join(map(str, ranks))}-D ncnn tensor "
                                f"(ONNX shape without the batch axis), got {list(t.shape)} "
                                f"with batch axis {t.batch_axis}")
    return rank


def unary_chain(src: Node, graph: Graph, x: str, out: str, ops: Sequence[str]) -> list[Node]:
    """UnaryOps applied in order to x, the last writing `out`; the steps between get x's shape."""
    t = graph.tensors[x]
    layers, current = [], x
    for k, op in enumerate(ops):
        target = out if k == len(ops) - 1 else new_tensor(graph, f"{out}_{op}", t.shape, t.batch_axis)
        suffix = f"_{op}" if list(ops).count(op) == 1 else f"_{op}{k}"     # the nodes join the graph later
        layers.append(layer(src, graph, "UnaryOp", [current], [target], {0: UNARY_OPS[op]}, suffix=suffix))
        current = target
    return layers


# ncnn's pad codes for "compute SAME padding at run time"
SAME_CODES = {"SAME_UPPER": -233, "SAME_LOWER": -234}


def require_float(graph: Graph, node: Node, names=None) -> None:
    for name in filter(None, names if names is not None else node.inputs[:1]):
        if graph.tensors[name].dtype.kind != "f":
            raise fail(node, graph, f"input '{name}' is {graph.tensors[name].dtype}; ncnn computes in "
                                    "float only")


def target_params(graph: Graph, node: Node, target: Shape, copied=()) -> dict[int, int]:
    """Reshape params giving ncnn shape `target` (numpy order); unknown extents at `copied`
    indexes are copied from the input's same-named axis, one other is inferred."""
    try:
        return reshape_params(target, copied)
    except ValueError as exc:
        raise fail(node, graph, f"{exc}; give the input shape with --input-shape") from None


def reshape_to(graph: Graph, src: Node, x: str, onnx_shape: Shape, batch_axis: int | None,
            keep_w: bool = False, out: str | None = None, suffix: str = "_reshape") -> tuple[Node, str]:
    """A Reshape of `x` to a tensor of `onnx_shape` (new, unless `out` is given)."""
    if out is None:
        out = new_tensor(graph, f"{x}{suffix}", onnx_shape, batch_axis)
    target = graph.tensors[out].ncnn_shape
    params = target_params(graph, src, target, [len(target) - 1] if keep_w else [])
    return layer(src, graph, "Reshape", [x], [out], params, suffix=suffix), out


def spatial_input(graph: Graph, node: Node, ranks=(3, 4)) -> tuple[Shape, int]:
    """The input's ONNX shape, which must be (1, C, spatial...) with the batch axis at 0."""
    x = graph.tensors[node.inputs[0]]
    require_float(graph, node)
    if x.shape is None:
        raise fail(node, graph, f"the rank of input '{x.name}' is unknown")
    if x.rank not in ranks:
        dims = {3: "1-D", 4: "2-D", 5: "3-D"}.get(x.rank, f"rank-{x.rank}")
        raise fail(node, graph, f"{dims} {node.op} is not supported (input rank {x.rank}); ncnn "
                                f"supports rank {' or '.join(map(str, ranks))} here")
    if graph.tensors[node.outputs[0]].rank != x.rank:
        raise fail(node, graph, f"the output shape of '{node.outputs[0]}' is unknown")
    if x.batch_axis != 0:
        raise fail(node, graph, f"input '{x.name}' {list(x.shape)} has no batch axis of extent 1 at "
                                "axis 0; ncnn runs this op on a (C, H, W) blob without batch, so "
                                "the input must be (1, C, ...) (a dynamic batch can be set to 1 "
                                "with --input-shape)")
    return x.shape, x.rank - 2


def window_attrs(graph: Graph, node: Node, nspatial: int, kernel: list[int]) -> dict:
    """strides, dilations, begin/end pads and auto_pad, each per spatial axis, validated."""
    # strides/dilations/pads: no schema default (their length is the kernel's)
    strides = list(node.attrs.get("strides", [1] * nspatial))
    dilations = list(node.attrs.get("dilations", [1] * nspatial))
    pads = list(node.attrs.get("pads", [0] * 2 * nspatial))
    auto_pad = node.attrs["auto_pad"]
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise fail(node, graph, f"unknown auto_pad {auto_pad!r}")
    if auto_pad == "VALID":
        pads = [0] * 2 * nspatial
    if len(kernel) != nspatial or len(strides) != nspatial or len(dilations) != nspatial \
            or len(pads) != 2 * nspatial:
        raise fail(node, graph, f"kernel_shape {kernel}, strides {strides}, dilations {dilations}, "
                                f"pads {pads} do not match {nspatial} spatial axes")
    if min(pads) < 0:
        raise fail(node, graph, f"negative pads {pads} are not supported")
    if min(strides) < 1 or min(dilations) < 1 or min(kernel) < 1:
        raise fail(node, graph, f"kernel {kernel}, strides {strides} and dilations {dilations} "
                                "must be positive")
    return {"strides": strides, "dilations": dilations, "begin": pads[:nspatial],
            "end": pads[nspatial:], "auto_pad": auto_pad}


def pool_window(graph: Graph, node: Node, nspatial: int) -> tuple[list[int], dict, bool, bool]:
    """MaxPool/AveragePool's window as ncnn pools it: (kernel, window_attrs, average?, count pads?);
    refuses what ncnn pooling has not got (Indices read, dilations)."""
    if node.op == "MaxPool" and any(o and graph.use_count(o) for o in node.outputs[1:]):
        raise fail(node, graph, "the Indices output is used; ncnn pooling has no indices")
    if "kernel_shape" not in node.attrs:
        raise fail(node, graph, "kernel_shape is missing")
    kernel = list(node.attrs["kernel_shape"])
    geo = window_attrs(graph, node, nspatial, kernel)
    if any(d != 1 for d in geo["dilations"]):
        raise fail(node, graph, f"dilations {geo['dilations']}: ncnn pooling has no dilation")
    avg = node.op == "AveragePool"
    return kernel, geo, avg, avg and bool(node.attrs["count_include_pad"])


def same_pads(size: int, extent: int, stride: int, auto_pad: str) -> tuple[int, int]:
    """ONNX SAME_UPPER / SAME_LOWER padding of one axis with a known size."""
    total = max(0, (math.ceil(size / stride) - 1) * stride + extent - size)
    small = total // 2
    return (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)


def as_2d(nspatial: int, values: list[int], one: int) -> list[int]:
    """A 1-D op's per-axis values as the (h, w) of the 2-D layer that runs it."""
    return [one, *values] if nspatial == 1 else list(values)


def wrap_1d(graph: Graph, node: Node, make, out_channels: int | None, out_len) -> list[Node]:
    """Run 2-D layer(s) built by make(x, out) on (C, 1, L) for a 1-D op on ONNX (1, C, L)."""
    x = graph.tensors[node.inputs[0]]
    pre, x4 = reshape_to(graph, node, x.name, (1, x.shape[1], 1, x.shape[2]), 0, keep_w=True,
                      suffix="_to2d")
    y4 = new_tensor(graph, f"{node.outputs[0]}_2d", (1, out_channels, 1, out_len), 0)
    post, _ = reshape_to(graph, node, y4, None, None, keep_w=True, out=node.outputs[0], suffix="_to1d")
    return [pre, *make(x4, y4), post]


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


def ncnn_axes(graph: Graph, node: Node, onnx_axes: list[int]) -> list[int]:
    """The ncnn axes of the reduced ONNX axes; the batch axis (extent 1) drops out."""
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    for a in onnx_axes:
        if not -x.rank <= a < x.rank:
            raise fail(node, graph, f"axis {a} is out of range for rank {x.rank}")
    axes = sorted({x.ncnn_axis(a) for a in onnx_axes} - {None})
    if not axes:
        raise fail(node, graph, f"normalizing only along the batch axis {x.batch_axis} is not supported "
                                "by ncnn (ncnn has no batch axis)")
    return axes


class Chain:
    """Layers for one ONNX node, each writing a fresh tensor shaped like x or like x reduced."""

    def __init__(self, graph: Graph, node: Node, nc_axes: list[int]):
        self.graph, self.node, self.nc_axes, self.layers = graph, node, nc_axes, []
        self.x = graph.tensors[node.inputs[0]]
        self.reduced_shape = tuple(1 if self.x.ncnn_axis(i) in nc_axes else d
                                   for i, d in enumerate(self.x.shape))

    def _emit(self, type_: str, inputs: list[str], params: dict, reduced: bool, suffix: str,
              out: str | None = None) -> str:
        if out is None:
            shape = self.reduced_shape if reduced else self.x.shape
            out = new_tensor(self.graph, f"{self.node.outputs[0]}{suffix}", shape, self.x.batch_axis)
        self.layers.append(layer(self.node, self.graph, type_, inputs, [out], params, suffix=suffix))
        return out

    def reduce(self, x: str, operation: str, suffix: str, out: str | None = None, keepdims: int = 1) -> str:
        params = {0: REDUCTION_OPS[operation], 1: 0, 3: self.nc_axes, 4: keepdims, 5: 1}
        return self._emit("Reduction", [x], params, True, suffix, out)

    def binary(self, a: str, b: str, op: str, suffix: str, out: str | None = None) -> str:
        return self._emit("BinaryOp", [a, b], {0: BINARY_OPS[op]}, False, suffix, out)

    def scalar(self, a: str, op: str, value: float, reduced: bool, suffix: str) -> str:
        return self._emit("BinaryOp", [a], {0: BINARY_OPS[op], 1: 1, 2: value}, reduced, suffix)

    def unary(self, a: str, op: str, reduced: bool, suffix: str) -> str:
        return self._emit("UnaryOp", [a], {0: UNARY_OPS[op]}, reduced, suffix)



"""Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout -> ncnn Reshape or Noop.

Everything works in ncnn coordinates: the ONNX axes without the tensor's batch
axis, numpy order (c, d, h, w). The output tensor's shape and batch axis decide
the ncnn target; extents are explicit where known, ncnn's copy (0) / infer (-1)
codes where not, and a Reshape 6= expression reads sizes known only at run time.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import expression_list
from converter.shapes.arithmetic import numel
from converter.shapes.symbolic import SHAPE_TERMS, Renderer, extent, op

from ..ir import Graph, Node, Shape, Tensor
from . import lowers
from .common import constant, fail, layer, ncnn_pairs, optional_constant, reshape_layer, reshape_to


@lowers("Flatten")
def flatten(graph: Graph, node: Node) -> list[Node]:
    out = graph.tensors[node.outputs[0]]
    if out.shape is None:
        raise fail(node, graph, "the output shape is unknown")
    if len(out.ncnn_shape) == 1:
        return [layer(node, graph, "Flatten", node.inputs[:1], [out.name])]
    if sum(d is None for d in out.ncnn_shape) > 1:       # sizes known only at run time
        return [_flatten_by_expression(graph, node)]
    return [reshape_to(graph, node, node.inputs[0], None, None, out=out.name)[0]]


def _flatten_by_expression(graph: Graph, node: Node) -> Node:
    x = graph.tensors[node.inputs[0]]
    axis = node.attrs["axis"] % x.rank if x.rank else 0
    outer, inner = 1, 1
    for i in range(x.rank):
        if i < axis:
            outer = op("*", outer, extent(graph, x.name, i))
        else:
            inner = op("*", inner, extent(graph, x.name, i))
    return expressed_reshape(graph, node, [outer, inner])


@lowers("Identity", "Dropout")
def identity(graph: Graph, node: Node) -> list[Node]:
    if node.op == "Dropout":
        if any(o and graph.use_count(o) for o in node.outputs[1:]):
            raise fail(node, graph, "the mask output is used; ncnn has no boolean tensors")
        training = optional_constant(graph, node, 2, "training_mode (input 2)")
        if training is not None and bool(training.reshape(-1)[0]):
            raise fail(node, graph, "training_mode=true is random at run time; export in eval mode")
    x, y = node.inputs[0], node.outputs[0]
    if y in graph.outputs:
        return [layer(node, graph, "Noop", [x], [y])]     # keep the graph output's name
    graph.replace_all_uses(y, x)
    return []


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


def _require_same_count(graph: Graph, node: Node, x: Tensor, codes: list[int], target: Shape) -> None:
    """onnxruntime fails such a Reshape at run time; ncnn would run it on whatever memory follows."""
    have, want = numel(x.shape) if x.shape is not None else None, numel(target)
    if have is not None and want is not None and have != want:
        raise fail(node, graph, f"'{x.name}' {list(x.shape)} has {have} elements; shape {codes} "
                                f"asks for {list(target)} ({want})")


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
    if SHAPE_TERMS in node.meta:
        return [expressed_reshape(graph, node, node.meta[SHAPE_TERMS])]
    codes = _shape_input(graph, node)
    # .get: allowzero exists from opset 14
    if node.attrs.get("allowzero", 0) and 0 in codes:
        raise fail(node, graph, f"shape {codes} with allowzero=1 makes an empty tensor, which ncnn cannot hold")
    onnx_target = _reshape_target(x, out, codes)
    _require_same_count(graph, node, x, codes, onnx_target)
    target = Tensor("", onnx_target, batch_axis=out.batch_axis).ncnn_shape
    pairs = ncnn_pairs(x, out, {i: i for i, c in enumerate(codes) if c == 0})
    return [reshape_layer(graph, node, x.name, out.name, pairs, target)]


def raw_axes(graph: Graph, node: Node) -> list[int] | None:
    """`axes` from the attribute (older opsets) or input 1 (opset 13+)."""
    axes = node.attrs.get("axes")
    if axes is None:
        value = optional_constant(graph, node, 1, "axes")
        axes = None if value is None else value.reshape(-1)
    return None if axes is None else [int(a) for a in axes]


def onnx_axes(graph: Graph, node: Node, rank: int) -> list[int] | None:
    """The axes normalized against `rank` and sorted."""
    axes = raw_axes(graph, node)
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
    axes = onnx_axes(graph, node, x.rank)
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
    raw = raw_axes(graph, node)
    if raw is None:
        raise fail(node, graph, "Unsqueeze needs axes")
    rank = x.rank + len(raw)
    axes = onnx_axes(graph, node, rank)
    kept = [i for i in range(rank) if i not in axes]
    shape = [1] * rank
    for o, i in zip(kept, range(x.rank)):
        shape[o] = x.shape[i]
    target = Tensor("", tuple(shape), batch_axis=out.batch_axis).ncnn_shape
    pairs = ncnn_pairs(x, out, {o: i for i, o in enumerate(kept)})
    return [reshape_layer(graph, node, x.name, out.name, pairs, target)]



"""Fuse RMS normalization written out in ONNX ops into one RMSNormalization node (lowered to ncnn
RMSNorm), as torch exports HF Llama/T5-style norms:

    y = x / Sqrt(ReduceMean(x ** 2  or  x * x) + eps)   or   x * Reciprocal(Sqrt(...))  or  x * (1 / Sqrt(...))
    y = Cast(y) (float to float, optional), y * w                                            (optional, constant over the normalized axes)

(keepdims mean over the trailing axes from `axis`). ncnn's RMSNorm computes these steps. eps
outside the square root, or a mean over other axes, leave the nodes alone. One walk over the
ReduceMean nodes (converter/rewrite/driver.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule
from converter.rewrite.patterns import affine, inverse_std, is_square_of, same_type_cast, trailing_mean_axis


def _match(graph: Graph, mean: Node) -> Match:
    axis = trailing_mean_axis(graph, mean)
    need(axis is not None, "not a keepdims float32 mean over the trailing axes")
    square = graph.producer(mean.inputs[0])
    need(square is not None and graph.use_count(square.outputs[0]) == 1,
         "the mean's input is not computed, or is read outside the pattern")
    x = square.inputs[0]
    need(is_square_of(graph, square, x) and graph.tensors[square.outputs[0]].shape == graph.tensors[x].shape,
         "the mean's input is not x ** 2 or x * x")
    found = inverse_std(graph, mean.outputs[0], x)
    need(found is not None, "the mean is not x / sqrt(mean + eps), eps a constant")
    eps, tail, y = found
    nodes = [square, mean, *tail]
    cast = same_type_cast(graph, y)
    if cast is not None:
        nodes.append(cast)
        y = cast.outputs[0]
    scale = affine(graph, y, "Mul", axis)
    weight = np.ones(graph.tensors[x].shape[axis:], np.float32) if scale is None else scale[1]
    if scale is not None:
        nodes.append(scale[0])
        y = scale[0].outputs[0]
    normalized = graph.tensors[x].shape[axis:]
    need(None not in normalized, "the normalized extents are not all known (ncnn's RMSNorm needs the affine size)")
    return Match(nodes, x=x, axis=axis, eps=eps, weight=weight, y=y, mean=mean, normalized=normalized)


def _build(graph: Graph, m: Match) -> list[Node]:
    gamma = graph.add_constant(f"{m.mean.name}_gamma", np.broadcast_to(m.weight, m.normalized).copy()).name
    return [Node(graph.fresh_name(f"{m.mean.name}_rmsnorm"), "RMSNormalization", [m.x, gamma], [m.y],
                 {"axis": m.axis, "epsilon": m.eps}, origin=m.mean.origin or m.mean.name)]


RULE = rule("fuse_rmsnorm", "rmsnorm_fused", "ReduceMean", _match, _build)


def fuse_rmsnorm(graph: Graph) -> dict:
    return apply(graph, RULE)

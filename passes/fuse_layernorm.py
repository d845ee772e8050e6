"""Fuse layer normalization written out in ONNX ops into one LayerNormalization node (lowered to
ncnn LayerNorm), as torch's TorchScript exporter (opset < 17) and older HF exports write it:

    d = x - ReduceMean(x)                 (keepdims, over trailing axes from `axis`)
    v = ReduceMean(d ** 2  or  d * d)     (the same axes)
    y = d / Sqrt(v + eps)  or  d * Reciprocal(Sqrt(v + eps))
    y = y * gamma + beta                  (each optional, constants over the normalized axes)

ncnn's LayerNorm computes exactly these steps. eps applied after the square root, means over
other axes, or a constant that varies along a non-normalized axis leave the nodes alone.
One walk over the ReduceMean nodes (converter/rewrite/driver.py).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule
from converter.rewrite.patterns import affine, inverse_std, is_square_of, sole_reader, trailing_mean_axis


def _match(graph: Graph, mean: Node) -> Match:
    axis = trailing_mean_axis(graph, mean)
    need(axis is not None, "not a keepdims float32 mean over the trailing axes")
    x, m = mean.inputs[0], mean.outputs[0]
    sub = sole_reader(graph, m, "Sub")
    need(sub is not None and sub.inputs == [x, m], "the mean is not read by one Sub(x, mean) only")
    d = sub.outputs[0]
    readers = graph.consumers(d)
    need(d not in graph.outputs and graph.tensors[d].shape == graph.tensors[x].shape,
         "x - mean is a graph output or broadcast to another shape")
    square = next((r for r in readers if is_square_of(graph, r, d)), None)
    need(square is not None, "x - mean is not squared (Pow 2 or d * d)")
    var = sole_reader(graph, square.outputs[0], "ReduceMean")
    need(var is not None and var.inputs[0] == square.outputs[0] and trailing_mean_axis(graph, var) == axis,
         "the square is not averaged over the same axes by one ReduceMean")
    found = inverse_std(graph, var.outputs[0], d)
    need(found is not None, "the variance is not (x - mean) / sqrt(variance + eps), eps a constant")
    eps, tail, y = found
    # d is read by the square (once, or twice for d * d) and by the division: nothing else
    need(len(readers) == len(square.inputs) - (square.op == "Pow") + 1 and tail[-1] in readers,
         "x - mean is read outside the pattern")
    nodes = [mean, sub, square, var, *tail]
    scale = affine(graph, y, "Mul", axis)
    gamma = np.ones(graph.tensors[x].shape[axis:], np.float32) if scale is None else scale[1]
    beta = None
    if scale is not None:
        nodes.append(scale[0])
        y = scale[0].outputs[0]
        shift = affine(graph, y, "Add", axis)
        if shift is not None:
            nodes.append(shift[0])
            y, beta = shift[0].outputs[0], shift[1]
    normalized = graph.tensors[x].shape[axis:]
    need(None not in normalized, "the normalized extents are not all known (ncnn's LayerNorm needs the affine size)")
    return Match(nodes, x=x, axis=axis, eps=eps, gamma=gamma, beta=beta, y=y, mean=mean, normalized=normalized)


def _build(graph: Graph, m: Match) -> list[Node]:
    inputs = [m.x, graph.add_constant(f"{m.mean.name}_gamma", np.broadcast_to(m.gamma, m.normalized).copy()).name]
    if m.beta is not None:
        inputs.append(graph.add_constant(f"{m.mean.name}_beta", np.broadcast_to(m.beta, m.normalized).copy()).name)
    return [Node(graph.fresh_name(f"{m.mean.name}_layernorm"), "LayerNormalization", inputs, [m.y],
                 {"axis": m.axis, "epsilon": m.eps}, origin=m.mean.origin or m.mean.name)]


RULE = rule("fuse_layernorm", "layernorm_fused", "ReduceMean", _match, _build)


def fuse_layernorm(graph: Graph) -> dict:
    return apply(graph, RULE)

"""Fuse RMS normalization written out in ONNX ops into one RMSNormalization node (lowered to ncnn
RMSNorm), as torch exports HF Llama/T5-style norms:

    y = x / Sqrt(ReduceMean(x ** 2  or  x * x) + eps)   or   x * Reciprocal(Sqrt(...))  or  x * (1 / Sqrt(...))
    y = Cast(y) (float to float, optional), y * w                                            (optional, constant over the normalized axes)

(keepdims mean over the trailing axes from `axis`). ncnn's RMSNorm computes these steps. eps
outside the square root, or a mean over other axes, leave the nodes alone. One walk over the
ReduceMean nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.patterns import affine, inverse_std, is_square_of, same_type_cast, trailing_mean_axis


def _match(graph: Graph, mean: Node):
    axis = trailing_mean_axis(graph, mean)
    square = graph.producer(mean.inputs[0])
    if axis is None or square is None or graph.use_count(square.outputs[0]) != 1:
        return None
    x = square.inputs[0]
    if not is_square_of(graph, square, x) or graph.tensors[square.outputs[0]].shape != graph.tensors[x].shape:
        return None
    found = inverse_std(graph, mean.outputs[0], x)
    if found is None:
        return None
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
    return x, axis, eps, weight, nodes, y


def fuse_rmsnorm(graph: Graph) -> dict:
    fused = 0
    for mean in graph.topological():
        if mean.op != "ReduceMean" or mean.name not in graph.nodes:
            continue
        found = _match(graph, mean)
        if found is None:
            continue
        x, axis, eps, weight, nodes, y = found
        normalized = graph.tensors[x].shape[axis:]
        if None in normalized:
            continue        # ncnn's RMSNorm needs the affine size
        gamma = graph.add_constant(f"{mean.name}_gamma", np.broadcast_to(weight, normalized).copy()).name
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(Node(graph.fresh_name(f"{mean.name}_rmsnorm"), "RMSNormalization", [x, gamma], [y],
                            {"axis": axis, "epsilon": eps}, origin=mean.origin or mean.name))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"rmsnorm_fused": fused}

"""Fuse layer normalization written out in ONNX ops into one LayerNormalization node (lowered to
ncnn LayerNorm), as torch's TorchScript exporter (opset < 17) and older HF exports write it:

    d = x - ReduceMean(x)                 (keepdims, over trailing axes from `axis`)
    v = ReduceMean(d ** 2  or  d * d)     (the same axes)
    y = d / Sqrt(v + eps)  or  d * Reciprocal(Sqrt(v + eps))
    y = y * gamma + beta                  (each optional, constants over the normalized axes)

ncnn's LayerNorm computes exactly these steps. eps applied after the square root, means over
other axes, or a constant that varies along a non-normalized axis leave the nodes alone.
One walk over the ReduceMean nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.patterns import affine, inverse_std, is_square_of, sole_reader, trailing_mean_axis


def _match(graph: Graph, mean: Node):
    axis = trailing_mean_axis(graph, mean)
    if axis is None:
        return None
    x, m = mean.inputs[0], mean.outputs[0]
    sub = sole_reader(graph, m, "Sub")
    if sub is None or sub.inputs != [x, m]:
        return None
    d = sub.outputs[0]
    readers = graph.consumers(d)
    if d in graph.outputs or graph.tensors[d].shape != graph.tensors[x].shape:
        return None
    square = next((r for r in readers if is_square_of(graph, r, d)), None)
    if square is None:
        return None
    var = sole_reader(graph, square.outputs[0], "ReduceMean")
    if var is None or var.inputs[0] != square.outputs[0] or trailing_mean_axis(graph, var) != axis:
        return None
    found = inverse_std(graph, var.outputs[0], d)
    if found is None:
        return None
    eps, tail, y = found
    # d is read by the square (once, or twice for d * d) and by the division: nothing else
    if len(readers) != len(square.inputs) - (square.op == "Pow") + 1 or tail[-1] not in readers:
        return None
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
    return x, axis, eps, gamma, beta, nodes, y


def fuse_layernorm(graph: Graph) -> dict:
    fused = 0
    for mean in graph.topological():
        if mean.op != "ReduceMean" or mean.name not in graph.nodes:
            continue
        found = _match(graph, mean)
        if found is None:
            continue
        x, axis, eps, gamma, beta, nodes, y = found
        normalized = graph.tensors[x].shape[axis:]
        if None in normalized:
            continue        # ncnn's LayerNorm needs the affine size
        inputs = [x, graph.add_constant(f"{mean.name}_gamma", np.broadcast_to(gamma, normalized).copy()).name]
        if beta is not None:
            inputs.append(graph.add_constant(f"{mean.name}_beta", np.broadcast_to(beta, normalized).copy()).name)
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(Node(graph.fresh_name(f"{mean.name}_layernorm"), "LayerNormalization", inputs, [y],
                            {"axis": axis, "epsilon": eps}, origin=mean.origin or mean.name))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"layernorm_fused": fused}

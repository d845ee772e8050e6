"""LayerNormalization's Mean / InvStdDev outputs, and RMSNormalization -> ncnn RMSNorm.

ncnn's LayerNorm gives only the normalized tensor. When a model reads the statistics they
are computed by extra layers, as ONNX defines them over the axes from `axis` on:

    Mean      = ReduceMean(x)                       (keepdims)
    InvStdDev = 1 / sqrt(ReduceMean((x - Mean)^2) + epsilon)
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Tensor
from ..ncnn_layers import BINARY_OPS, UNARY_OPS
from . import lowers
from .common import fail, layer, new_tensor, optional_constant
from .normalization import _affine, _normalized_axes, normalize_trailing

REDUCE_MEAN = 3


def _like(graph: Graph, stem: str, t: Tensor) -> str:
    return new_tensor(graph, stem, t.shape, t.batch_axis)


def statistics(graph: Graph, node: Node, x: Tensor, axis: int) -> list[Node]:
    """Layers computing outputs 1 (Mean) and 2 (InvStdDev) of a LayerNormalization, if read."""
    outputs = list(node.outputs) + ["", ""]
    wanted = [o if o and graph.use_count(o) else None for o in outputs[1:3]]
    nc_axes = sorted({x.ncnn_axis(a) for a in range(axis, x.rank)} - {None})
    reduce = {0: REDUCE_MEAN, 1: 0, 3: nc_axes, 4: 1, 5: 1}
    kept = tuple(d if i < axis else 1 for i, d in enumerate(x.shape))
    mean = wanted[0] or new_tensor(graph, f"{node.outputs[0]}_mean", kept, x.batch_axis)
    layers = [layer(node, graph, "Reduction", [x.name], [mean], reduce, suffix="_mean")]
    if wanted[1] is None:
        return layers
    centered = _like(graph, f"{node.outputs[0]}_centered", x)
    squared = _like(graph, f"{node.outputs[0]}_squared", x)
    m = graph.tensors[mean]
    var, var_eps, std = (_like(graph, f"{node.outputs[0]}_{s}", m) for s in ("var", "var_eps", "std"))
    eps = float(np.float32(node.attrs.get("epsilon", 1e-5)))
    return layers + [
        layer(node, graph, "BinaryOp", [x.name, mean], [centered], {0: BINARY_OPS["sub"]}, suffix="_center"),
        layer(node, graph, "UnaryOp", [centered], [squared], {0: UNARY_OPS["square"]}, suffix="_square"),
        layer(node, graph, "Reduction", [squared], [var], reduce, suffix="_var"),
        layer(node, graph, "BinaryOp", [var], [var_eps], {0: BINARY_OPS["add"], 1: 1, 2: eps}, suffix="_eps"),
        layer(node, graph, "UnaryOp", [var_eps], [std], {0: UNARY_OPS["sqrt"]}, suffix="_sqrt"),
        # 1 / std as a division: UnaryOp rsqrt / reciprocal may use the CPU's approximations
        layer(node, graph, "BinaryOp", [std], [wanted[1]], {0: BINARY_OPS["rdiv"], 1: 1, 2: 1.0}, suffix="_inv")]


@lowers("RMSNormalization")
def rms_norm(graph: Graph, node: Node) -> list[Node]:
    _, _, normalized = _normalized_axes(graph, node)
    scale = optional_constant(graph, node, 1, "scale")
    if scale is None:
        raise fail(node, graph, "scale is missing")
    gamma = _affine(graph, node, scale, normalized)
    params = {0: int(np.prod(normalized)), 1: float(node.attrs.get("epsilon", 1e-5)), 2: 1}
    return normalize_trailing(graph, node, "RMSNorm", params, [gamma])

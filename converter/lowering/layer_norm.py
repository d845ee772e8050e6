"""LayerNormalization -> ncnn LayerNorm, RMSNormalization -> ncnn RMSNorm.

ncnn LayerNorm normalizes over the innermost axes, and which ones is decided
by `affine_size` against the input's rank (layernorm.cpp): 1-D: all; 2-D:
each row (w); 3-D: w, else w*h; 4-D: w, w*h, else w*h*d. Normalizing every
axis of a 2-D..4-D tensor is not among these, so that case is flattened to
1-D around the LayerNorm.

ncnn's LayerNorm gives only the normalized tensor. When a model reads
LayerNormalization's statistics they are computed by extra layers, as ONNX
defines them over the axes from `axis` on:

    Mean      = ReduceMean(x)                       (keepdims)
    InvStdDev = 1 / sqrt(ReduceMean((x - Mean)^2) + epsilon)
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, REDUCTION_OPS, UNARY_OPS

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import fail, layer, new_tensor, optional_constant, reshape_layer

# ncnn LayerNorm: for an input of this many ncnn axes, how many innermost axes it can normalize
LAYERNORM_SPANS = {1: (1,), 2: (1,), 3: (1, 2), 4: (1, 2, 3)}


@lowers("LayerNormalization")
def layer_norm(graph: Graph, node: Node) -> list[Node]:
    x, axis, normalized = _normalized_axes(graph, node)
    scale = optional_constant(graph, node, 1, "scale")
    bias = optional_constant(graph, node, 2, "bias")
    if scale is None:
        raise fail(node, graph, "scale is missing")
    gamma = _affine(graph, node, scale, normalized)
    beta = np.zeros_like(gamma) if bias is None else _affine(graph, node, bias, normalized)
    params = {0: int(np.prod(normalized)), 1: float(node.attrs["epsilon"]), 2: 1}
    stats = statistics(graph, node, x, axis)
    if not graph.use_count(node.outputs[0]):
        return stats
    return normalize_trailing(graph, node, "LayerNorm", params, [gamma, beta]) + stats


def _normalized_axes(graph: Graph, node: Node) -> tuple[Tensor, int, tuple]:
    """The input, the first normalized axis and the normalized extents (all known)."""
    x = graph.tensors[node.inputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    axis = node.attrs["axis"]
    if not -x.rank <= axis < x.rank:
        raise fail(node, graph, f"axis {axis} is out of range for rank {x.rank}")
    axis %= x.rank
    normalized = x.shape[axis:]
    if None in normalized:
        raise fail(node, graph, f"normalized axes {list(normalized)} have unknown extents; ncnn {node.op} "
                                "needs the affine size; give static input shapes with --input-shape")
    return x, axis, normalized


def normalize_trailing(graph: Graph, node: Node, type_: str, params: dict, weights: list) -> list[Node]:
    """ncnn LayerNorm / RMSNorm over the node's trailing axes from `axis` (flattened when ncnn
    cannot pick them all)."""
    x, axis, normalized = _normalized_axes(graph, node)
    out = graph.tensors[node.outputs[0]]
    # the batch axis (extent 1) may be among the normalized axes; it changes nothing
    span = sum(1 for i in range(axis, x.rank) if i != x.batch_axis)
    rank = len(x.ncnn_shape)
    if span in LAYERNORM_SPANS[rank]:
        return [layer(node, graph, type_, [x.name], [out.name], params, weights=weights)]
    if span != rank:
        raise fail(node, graph, f"normalizing {span} of {rank} ncnn axes is not an ncnn {type_} form")
    flat, normed = (graph.fresh_name(f"{out.name}_{s}") for s in ("flat", "normed"))
    for name in (flat, normed):
        graph.add_tensor(Tensor(name, (int(np.prod(normalized)),), out.dtype))
    return [reshape_layer(graph, node, x.name, flat, {}, suffix="_flatten"),
            layer(node, graph, type_, [flat], [normed], params, weights=weights),
            reshape_layer(graph, node, normed, out.name, {}, suffix="_unflatten")]


def _affine(graph: Graph, node: Node, value: np.ndarray, normalized: tuple) -> np.ndarray:
    """Scale or bias as one value per normalized element (ONNX lets them broadcast)."""
    value = np.asarray(value, np.float32)
    while value.ndim > len(normalized) and value.shape[0] == 1:
        value = value[0]
    try:
        return np.broadcast_to(value, normalized)
    except ValueError:
        raise fail(node, graph, f"scale/bias of shape {list(value.shape)} does not broadcast to the "
                                f"normalized shape {list(normalized)}") from None




def _like(graph: Graph, stem: str, t: Tensor) -> str:
    return new_tensor(graph, stem, t.shape, t.batch_axis)


def statistics(graph: Graph, node: Node, x: Tensor, axis: int) -> list[Node]:
    """Layers computing outputs 1 (Mean) and 2 (InvStdDev) of a LayerNormalization, if read."""
    outputs = list(node.outputs) + ["", ""]
    wanted = [o if o and graph.use_count(o) else None for o in outputs[1:3]]
    nc_axes = sorted({x.ncnn_axis(a) for a in range(axis, x.rank)} - {None})
    reduce = {0: REDUCTION_OPS["mean"], 1: 0, 3: nc_axes, 4: 1, 5: 1}
    kept = tuple(d if i < axis else 1 for i, d in enumerate(x.shape))
    mean = wanted[0] or new_tensor(graph, f"{node.outputs[0]}_mean", kept, x.batch_axis)
    layers = [layer(node, graph, "Reduction", [x.name], [mean], reduce, suffix="_mean")]
    if wanted[1] is None:
        return layers
    centered = _like(graph, f"{node.outputs[0]}_centered", x)
    squared = _like(graph, f"{node.outputs[0]}_squared", x)
    m = graph.tensors[mean]
    var, var_eps, std = (_like(graph, f"{node.outputs[0]}_{s}", m) for s in ("var", "var_eps", "std"))
    eps = float(np.float32(node.attrs["epsilon"]))
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
    params = {0: int(np.prod(normalized)), 1: float(node.attrs["epsilon"]), 2: 1}
    return normalize_trailing(graph, node, "RMSNorm", params, [gamma])



"""The transformer-block ops: Softmax, LayerNormalization, Erf and Gelu -> ncnn layers.

ncnn LayerNorm normalizes over the innermost axes, and which ones is decided
by `affine_size` against the input's rank (layernorm.cpp): 1-D: all; 2-D:
each row (w); 3-D: w, else w*h; 4-D: w, w*h, else w*h*d. Normalizing every
axis of a 2-D..4-D tensor is not among these, so that case is flattened to
1-D around the LayerNorm.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import fail, layer, ncnn_axis, optional_constant
from .tensor_ops import reshape_layer


@lowers("Softmax")
def softmax(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    axis = node.attrs.get("axis", -1 if graph.opset >= 13 else 1)
    if graph.opset < 13 and axis % max(x.rank, 1) != x.rank - 1:
        raise fail(node, graph, f"opset {graph.opset} Softmax with axis {axis} normalizes the flattened "
                                "trailing axes together; only the last axis is supported")
    return [layer(node, graph, "Softmax", [x.name], node.outputs[:1],
                  {0: ncnn_axis(graph, node, x.name, axis), 1: 1})]


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
    params = {0: int(np.prod(normalized)), 1: float(node.attrs.get("epsilon", 1e-5)), 2: 1}
    from .norm_statistics import statistics     # Mean / InvStdDev, when something reads them
    stats = statistics(graph, node, x, axis)
    if not graph.use_count(node.outputs[0]):
        return stats
    return normalize_trailing(graph, node, "LayerNorm", params, [gamma, beta]) + stats


def _normalized_axes(graph: Graph, node: Node) -> tuple[Tensor, int, tuple]:
    """The input, the first normalized axis and the normalized extents (all known)."""
    x = graph.tensors[node.inputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    axis = node.attrs.get("axis", -1)
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


@lowers("Erf")
def erf(graph: Graph, node: Node) -> list[Node]:
    return [layer(node, graph, "Erf", node.inputs[:1], node.outputs[:1])]


GELU_APPROXIMATIONS = {"none": 0, "tanh": 1}


@lowers("Gelu")
def gelu(graph: Graph, node: Node) -> list[Node]:
    approximate = node.attrs.get("approximate", "none")
    if approximate not in GELU_APPROXIMATIONS:
        raise fail(node, graph, f"approximate={approximate!r} is not one of {sorted(GELU_APPROXIMATIONS)}")
    return [layer(node, graph, "GELU", node.inputs[:1], node.outputs[:1],
                  {0: GELU_APPROXIMATIONS[approximate]})]

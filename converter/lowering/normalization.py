"""Per-channel and statistics normalizations: BatchNormalization -> BatchNorm, LRN,
InstanceNormalization -> InstanceNorm, GroupNormalization -> GroupNorm; LpNormalization and
MeanVarianceNormalization -> Reduction + BinaryOp chains.

The per-channel layers work on ONNX axis 1, which must follow a batch axis at 0
so that it is ncnn's outermost axis. Every chain Reduction keeps the reduced
axes, so the follow-up BinaryOp has operands of equal rank.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS

from ..ir import Graph, Node
from . import lowers
from .common import Chain, constant, fail, layer, ncnn_axes, new_tensor, require_float, spatial_input
from .elementwise import binary

FLT_MIN = float(np.finfo(np.float32).tiny)


MVN_EPSILON = 1e-9           # the ONNX function body adds it to the standard deviation


@lowers("LpNormalization")
def lp_normalization(graph: Graph, node: Node) -> list[Node]:
    """x / norm, and 0 where the norm is 0 (ONNX's rule): the norm is raised to FLT_MIN first."""
    require_float(graph, node)
    p = int(node.attrs["p"])
    if p not in (1, 2):
        raise fail(node, graph, f"p={p}: ONNX LpNormalization defines only p=1 and p=2")
    chain = Chain(graph, node, ncnn_axes(graph, node, [node.attrs["axis"]]))
    norm = chain.reduce(chain.x.name, "l2" if p == 2 else "l1", "_norm")
    safe = chain.scalar(norm, "max", FLT_MIN, True, "_safe")
    chain.binary(chain.x.name, safe, "div", "", out=node.outputs[0])
    return chain.layers


@lowers("MeanVarianceNormalization")
def mean_variance_normalization(graph: Graph, node: Node) -> list[Node]:
    """(x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9), as ONNX's function body."""
    require_float(graph, node)
    axes = [int(a) for a in node.attrs["axes"]]
    chain = Chain(graph, node, ncnn_axes(graph, node, axes))
    mean = chain.reduce(chain.x.name, "mean", "_mean")
    centered = chain.binary(chain.x.name, mean, "sub", "_centered")
    squared = chain.unary(centered, "square", False, "_squared")
    variance = chain.reduce(squared, "mean", "_variance")
    deviation = chain.unary(variance, "sqrt", True, "_std")
    denominator = chain.scalar(deviation, "add", MVN_EPSILON, True, "_den")
    chain.binary(centered, denominator, "div", "", out=node.outputs[0])
    return chain.layers


ACROSS_CHANNELS = 0


@lowers("LRN")
def lrn(graph: Graph, node: Node) -> list[Node]:
    """ONNX and ncnn both scale alpha by 1/size; ncnn's window is the same only for odd sizes."""
    spatial_input(graph, node, ranks=(4,))     # onnxruntime, the reference, runs only 4-D LRN
    size = int(node.attrs["size"])
    if size < 1 or size % 2 == 0:
        raise fail(node, graph, f"size {size}: ncnn's LRN window matches ONNX's only for odd sizes "
                                "(for an even size ncnn reaches one channel further back, ONNX forward)")
    params = {0: ACROSS_CHANNELS, 1: size, 2: float(node.attrs["alpha"]),
              3: float(node.attrs["beta"]), 4: float(node.attrs["bias"])}
    return [layer(node, graph, "LRN", node.inputs[:1], node.outputs[:1], params)]


def _channel_input(graph: Graph, node: Node) -> tuple:
    """(ONNX shape, channels) of an input (1, C, ...) whose channel axis is ncnn's outermost."""
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    if x.shape is None or x.rank < 3:
        raise fail(node, graph, "the input needs a batch, a channel and at least one spatial axis")
    if x.batch_axis != 0:
        raise fail(node, graph, f"input '{x.name}' {list(x.shape)} has no batch axis of extent 1 at axis 0; "
                                "ncnn normalizes the outermost axis, which must be ONNX's channel axis")
    if x.rank > 5:
        raise fail(node, graph, f"rank {x.rank}: ncnn holds at most 4 axes without the batch axis")
    if x.shape[1] is None:
        raise fail(node, graph, "the channel count is unknown")
    return x.shape, int(x.shape[1])


def _per_channel(graph: Graph, node: Node, slot: int, what: str, channels: int,
                 per: int = 1) -> np.ndarray:
    """A constant scale/bias as one float per channel (`per` consecutive channels share a value)."""
    value = constant(graph, node, slot, what).astype(np.float32).ravel()
    if value.size * per != channels:
        raise fail(node, graph, f"{what} has {value.size} values for {channels} channels")
    return np.repeat(value, per)


@lowers("InstanceNormalization")
def instance_normalization(graph: Graph, node: Node) -> list[Node]:
    """3-D/4-D ncnn blobs -> InstanceNorm; a 2-D (C, L) blob -> GroupNorm with one channel per
    group, since InstanceNorm would take the whole 2-D blob as one channel."""
    shape, channels = _channel_input(graph, node)
    gamma = _per_channel(graph, node, 1, "scale (input 1)", channels)
    beta = _per_channel(graph, node, 2, "B (input 2)", channels)
    eps = float(node.attrs["epsilon"])
    if len(shape) == 3:
        return [layer(node, graph, "GroupNorm", node.inputs[:1], node.outputs[:1],
                      {0: channels, 1: channels, 2: eps, 3: 1}, [gamma, beta])]
    return [layer(node, graph, "InstanceNorm", node.inputs[:1], node.outputs[:1],
                  {0: channels, 1: eps, 2: 1}, [gamma, beta])]


@lowers("GroupNormalization")
def group_normalization(graph: Graph, node: Node) -> list[Node]:
    """ncnn GroupNorm's gamma/beta are per channel: opset 21's are, opset 18's per-group values
    are repeated over each group's channels."""
    shape, channels = _channel_input(graph, node)
    groups = int(node.attrs["num_groups"])
    if groups < 1 or channels % groups:
        raise fail(node, graph, f"{channels} channels do not split into {groups} groups")
    per = channels // groups if graph.opset < 21 else 1
    gamma = _per_channel(graph, node, 1, "scale (input 1)", channels, per)
    beta = _per_channel(graph, node, 2, "bias (input 2)", channels, per)
    return [layer(node, graph, "GroupNorm", node.inputs[:1], node.outputs[:1],
                  {0: groups, 1: channels, 2: float(node.attrs["epsilon"]), 3: 1},
                  [gamma, beta])]


def batchnorm_affine(graph: Graph, node: Node) -> tuple[np.ndarray, ...]:
    """(scale, bias, mean, var, eps) of an inference BatchNormalization, checked constant."""
    # .get: BatchNormalization gains training_mode at opset 14
    if node.attrs.get("training_mode", 0):
        raise fail(node, graph, "training_mode=1 (batch statistics) is not supported; export in eval mode")
    if any(o and graph.use_count(o) for o in node.outputs[1:]):
        raise fail(node, graph, "the running mean/var outputs are used; only inference BN is supported")
    names = ("scale", "bias", "mean", "var")
    values = [constant(graph, node, i + 1, f"the {n} (input {i + 1})").astype(np.float64).ravel()
              for i, n in enumerate(names)]
    x = graph.tensors[node.inputs[0]]
    channels = x.shape[1] if x.rank and x.rank >= 2 else None
    sizes = [v.size for v in values]
    if len(set(sizes)) != 1 or (channels is not None and sizes[0] != channels):
        raise fail(node, graph, f"scale/bias/mean/var have {sizes} values for {channels} channels")
    return (*values, float(node.attrs["epsilon"]))


@lowers("BatchNormalization")
def batch_normalization(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    scale, bias, mean, var, eps = batchnorm_affine(graph, node)
    channels = len(scale)
    if x.rank is None or x.rank < 2:
        raise fail(node, graph, "the input needs a channel axis (rank >= 2)")
    if x.shape[1] is not None and x.shape[1] != channels:
        raise fail(node, graph, f"{channels} scale values for {x.shape[1]} channels")
    out = node.outputs[0]
    if x.batch_axis == 0:
        # ncnn's BatchNorm scales ncnn axis 0 (w of 1-D, h of 2-D, c of 3-/4-D): ONNX axis 1 here
        return [layer(node, graph, "BatchNorm", [x.name], [out], {0: channels, 1: eps},
                      [scale, mean, var, bias])]
    # no batch axis to drop: the channel axis is not ncnn's axis 0, so compute a*x + b
    a = scale / np.sqrt(var + eps)
    b = bias - a * mean
    const_shape = (channels,) + (1,) * (x.rank - 2)
    a_t = graph.add_constant(f"{node.name}_a", a.astype(np.float32).reshape(const_shape)).name
    b_t = graph.add_constant(f"{node.name}_b", b.astype(np.float32).reshape(const_shape)).name
    mid = new_tensor(graph, f"{out}_scaled", x.shape, x.batch_axis)
    return [binary(graph, node, x.name, a_t, BINARY_OPS["mul"], mid, suffix="_mul"),
            binary(graph, node, mid, b_t, BINARY_OPS["add"], out, suffix="_add")]



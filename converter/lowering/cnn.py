"""CNN ONNX ops -> ncnn layers: Conv, BatchNormalization, Gemm, Flatten, Concat, Identity, Dropout.

Spatial ops need the ONNX batch axis at 0, so the ncnn blob is (C, H, W) and
ncnn's channel axis is ONNX axis 1. A 1-D op (ONNX (1, C, L), ncnn (C, L)) runs
as the 2-D layer on (C, 1, L) between two Reshapes, so no extra layer types
are needed. Window geometry (pads, auto_pad) is resolved here: explicit pads
when the spatial extents are known, ncnn's SAME codes when they are not.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Shape, Tensor
from ..ncnn_layers import BINARY_OPS
from . import lowers
from .common import constant, fail, layer, ncnn_axis, new_tensor, optional_constant
from .elementwise import binary

# ncnn Reshape param ids of a target shape, numpy order (c, d, h, w)
RESHAPE_IDS = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}
# ncnn's pad codes for "compute SAME padding at run time"
SAME_CODES = {"SAME_UPPER": -233, "SAME_LOWER": -234}


# ---- helpers shared with pooling ---------------------------------------------

def require_float(graph: Graph, node: Node, names=None) -> None:
    for name in filter(None, names if names is not None else node.inputs[:1]):
        if graph.tensors[name].dtype.kind != "f":
            raise fail(node, graph, f"input '{name}' is {graph.tensors[name].dtype}; ncnn computes in "
                                    "float only")


def reshape_params(graph: Graph, node: Node, target: Shape, keep_w: bool = False) -> dict[int, int]:
    """Reshape params giving ncnn shape `target` (numpy order).

    Unknown extents: the innermost one is copied from the input when `keep_w`
    (the caller knows it is unchanged); one other may be inferred.
    """
    params, inferred = {}, False
    for i, (pid, extent) in enumerate(zip(RESHAPE_IDS[len(target)], target)):
        if extent is not None:
            params[pid] = int(extent)
        elif keep_w and i == len(target) - 1:
            params[pid] = 0
        elif not inferred:
            params[pid], inferred = -1, True
        else:
            raise fail(node, graph, f"reshaping to {list(target)} needs more than one unknown extent; "
                                    "give the input shape with --input-shape")
    return params


def reshape(graph: Graph, src: Node, x: str, onnx_shape: Shape, batch_axis: int | None,
            keep_w: bool = False, out: str | None = None, suffix: str = "_reshape") -> tuple[Node, str]:
    """A Reshape of `x` to a tensor of `onnx_shape` (new, unless `out` is given)."""
    if out is None:
        out = new_tensor(graph, f"{x}{suffix}", onnx_shape, batch_axis)
    target = graph.tensors[out].ncnn_shape
    return layer(src, graph, "Reshape", [x], [out], reshape_params(graph, src, target, keep_w),
                 suffix=suffix), out


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
    strides = list(node.attrs.get("strides", [1] * nspatial))
    dilations = list(node.attrs.get("dilations", [1] * nspatial))
    pads = list(node.attrs.get("pads", [0] * 2 * nspatial))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
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
    pre, x4 = reshape(graph, node, x.name, (1, x.shape[1], 1, x.shape[2]), 0, keep_w=True,
                      suffix="_to2d")
    y4 = new_tensor(graph, f"{node.outputs[0]}_2d", (1, out_channels, 1, out_len), 0)
    post, _ = reshape(graph, node, y4, None, None, keep_w=True, out=node.outputs[0], suffix="_to1d")
    return [pre, *make(x4, y4), post]


# ---- Conv -------------------------------------------------------------------

def window_params(cout: int, weight: np.ndarray, bias, group: int, kernel: list, geo: dict, nspatial: int) -> dict:
    """The params Convolution and Deconvolution (and their depthwise forms) share: outputs, weight
    size, bias term, group, and kernel/stride/dilation as (w, h)."""
    params = {0: cout, 6: int(weight.size)}
    if bias is not None:
        params[5] = 1
    if group > 1:
        params[7] = group
    k2, s2, d2 = (as_2d(nspatial, v, 1) for v in (kernel, geo["strides"], geo["dilations"]))
    params.update({1: k2[1], 11: k2[0], 3: s2[1], 13: s2[0], 2: d2[1], 12: d2[0]})
    return params


def conv_weights(graph: Graph, node: Node, nspatial: int) -> tuple[np.ndarray, np.ndarray | None, int, list]:
    """Conv/ConvTranspose's constant weight (float32) and bias, group, and kernel (checked against
    the weight's spatial extents)."""
    weight = constant(graph, node, 1, "the weight (input 1)").astype(np.float32)
    bias = optional_constant(graph, node, 2, "the bias (input 2)")
    group = int(node.attrs.get("group", 1))
    kernel = list(node.attrs.get("kernel_shape", weight.shape[2:]))
    if weight.ndim != nspatial + 2 or list(weight.shape[2:]) != kernel:
        raise fail(node, graph, f"weight shape {list(weight.shape)} does not match kernel {kernel}")
    return weight, bias, group, kernel


@lowers("Conv")
def conv(graph: Graph, node: Node) -> list[Node]:
    shape, nspatial = spatial_input(graph, node)
    if len(node.inputs) > 3:
        raise fail(node, graph, f"Conv takes at most 3 inputs, got {len(node.inputs)}")
    weight, bias, group, kernel = conv_weights(graph, node, nspatial)
    cout, cin_g = weight.shape[0], weight.shape[1]
    if shape[1] is not None and cin_g * group != shape[1] or cout % group:
        raise fail(node, graph, f"weight {list(weight.shape)} with group {group} does not fit "
                                f"{shape[1]} input channels")
    geo = window_attrs(graph, node, nspatial, kernel)
    params = window_params(cout, weight, bias, group, kernel, geo, nspatial)
    params.update(_conv_pads(graph, node, shape[2:], kernel, geo, nspatial))
    if bias is not None and np.size(bias) not in (1, cout):
        raise fail(node, graph, f"bias of {np.size(bias)} values for {cout} output channels")
    weights = [weight] + ([np.broadcast_to(np.asarray(bias, np.float32).reshape(-1), (cout,))]
                          if bias is not None else [])
    type_ = "ConvolutionDepthWise" if group > 1 else "Convolution"
    return conv_like_layer(graph, node, type_, params, weights, cout, nspatial)


def conv_like_layer(graph: Graph, node: Node, type_: str, params: dict, weights: list, out_channels: int,
                    nspatial: int) -> list[Node]:
    """One windowed layer from the node's input to its output; a 1-D op runs it on (C, 1, L)."""
    def make(x: str, y: str) -> list[Node]:
        return [layer(node, graph, type_, [x], [y], params, weights)]
    if nspatial == 1:
        return wrap_1d(graph, node, make, out_channels, graph.tensors[node.outputs[0]].shape[2])
    return make(node.inputs[0], node.outputs[0])


def _conv_pads(graph: Graph, node: Node, sizes: Shape, kernel: list[int], geo: dict,
               nspatial: int) -> dict[int, int]:
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, geo["dilations"])]
    begin, end = geo["begin"], geo["end"]
    if geo["auto_pad"] in SAME_CODES:
        if all(s is not None for s in sizes):
            begin, end = zip(*(same_pads(s, e, st, geo["auto_pad"])
                               for s, e, st in zip(sizes, extents, geo["strides"])))
        elif all(e >= st for e, st in zip(extents, geo["strides"])):
            return {4: SAME_CODES[geo["auto_pad"]]}     # ncnn pads at run time, same rule
        else:
            raise fail(node, graph, f"auto_pad {geo['auto_pad']} with a kernel extent smaller than the "
                                    "stride needs known spatial sizes; give them with --input-shape")
    (top, left), (bottom, right) = as_2d(nspatial, list(begin), 0), as_2d(nspatial, list(end), 0)
    return {4: left, 15: right, 14: top, 16: bottom}


# ---- BatchNormalization ---------------------------------------------------------

def batchnorm_affine(graph: Graph, node: Node) -> tuple[np.ndarray, ...]:
    """(scale, bias, mean, var, eps) of an inference BatchNormalization, checked constant."""
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
    return (*values, float(node.attrs.get("epsilon", 1e-5)))


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


# ---- Gemm ---------------------------------------------------------------------

@lowers("Gemm")
def gemm(graph: Graph, node: Node) -> list[Node]:
    """alpha * A @ B' + beta * C: constant B -> InnerProduct (alpha folded into the weight, a
    per-column C as its bias); run-time B -> MatMul; other C -> one add after it."""
    require_float(graph, node, node.inputs)
    a = graph.tensors[node.inputs[0]]
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    trans_b = int(node.attrs.get("transB", 0))
    if a.rank != 2 or a.batch_axis not in (0, None):
        raise fail(node, graph, f"A must be a matrix with the batch (if any) on axis 0, got "
                                f"{a.shape} with batch axis {a.batch_axis}")
    out = graph.tensors[node.outputs[0]]
    pre: list[Node] = []
    if node.attrs.get("transA", 0):
        a, pre = _transposed(graph, node, a, out.batch_axis)
    c_name = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] and beta != 0.0 else None
    c_value = graph.value(c_name) if c_name else None
    b_value = graph.value(node.inputs[1])
    if b_value is not None:
        weight = (b_value if trans_b else b_value.T).astype(np.float64) * alpha     # (N, K)
        n = weight.shape[0]
        params = {0: n, 2: int(weight.size)}
        if c_name is None:
            return pre + [layer(node, graph, "InnerProduct", [a.name], [out.name], params, [weight])]
        if c_value is not None and (c_value.size == 1 or c_value.size == n and c_value.shape[-1] == n):
            params[1] = 1     # one value per output column: InnerProduct's bias
            bias = np.broadcast_to(beta * c_value.astype(np.float64).reshape(-1), (n,))
            return pre + [layer(node, graph, "InnerProduct", [a.name], [out.name], params,
                                [weight, bias])]
        product = new_tensor(graph, f"{out.name}_ab", out.shape, out.batch_axis)
        nodes = pre + [layer(node, graph, "InnerProduct", [a.name], [product], params, [weight])]
    else:
        b = graph.tensors[node.inputs[1]]
        if b.rank != 2 or b.batch_axis is not None:
            raise fail(node, graph, f"a run-time B must be a matrix without batch axis, got {b.shape} "
                                    f"with batch axis {b.batch_axis}")
        product = out.name if alpha == 1.0 and c_name is None else \
            new_tensor(graph, f"{out.name}_ab", out.shape, out.batch_axis)
        nodes = pre + [layer(node, graph, "MatMul", [a.name, b.name], [product], {0: trans_b})]
        if alpha != 1.0:
            scaled = out.name if c_name is None else \
                new_tensor(graph, f"{out.name}_alpha", out.shape, out.batch_axis)
            nodes.append(layer(node, graph, "BinaryOp", [product], [scaled],
                               {0: BINARY_OPS["mul"], 1: 1, 2: alpha}, suffix="_alpha"))
            product = scaled
        if c_name is None:
            return nodes
    return nodes + _add_scaled_c(graph, node, product, c_name, beta, out.name)


def _transposed(graph: Graph, node: Node, a: Tensor, batch_axis: int | None) -> tuple[Tensor, list[Node]]:
    """A.T for transA=1, as a tensor with the output's batch axis (0 only when A.T is 1 x K)."""
    k, m = a.shape
    if a.is_constant:
        return graph.tensors[graph.add_constant(f"{a.name}_t", a.value.T).name], []
    t = graph.tensors[new_tensor(graph, f"{a.name}_t", (m, k), batch_axis)]
    if a.ncnn_shape == t.ncnn_shape and (k == 1 or m == 1):
        return t, [layer(node, graph, "Noop", [a.name], [t.name], suffix="_transA")]
    if k == 1 or m == 1:      # the values keep their order: only the shape changes
        return t, [layer(node, graph, "Reshape", [a.name], [t.name],
                         reshape_params(graph, node, t.ncnn_shape), suffix="_transA")]
    if len(a.ncnn_shape) != 2:
        raise fail(node, graph, f"transA=1 on A {list(a.shape)} with batch axis {a.batch_axis}")
    return t, [layer(node, graph, "Permute", [a.name], [t.name], {0: 1}, suffix="_transA")]


def _add_scaled_c(graph: Graph, node: Node, product: str, c_name: str, beta: float,
                  out: str) -> list[Node]:
    """product + beta * C; a constant C is scaled at conversion time."""
    nodes, c = [], graph.tensors[c_name]
    if c.is_constant:
        c_name = graph.add_constant(f"{node.name}_c", (beta * c.value.astype(np.float64))
                                    .astype(np.float32)).name
    elif beta != 1.0:
        scaled = new_tensor(graph, f"{c_name}_beta", c.shape, c.batch_axis)
        nodes.append(layer(node, graph, "BinaryOp", [c_name], [scaled],
                           {0: BINARY_OPS["mul"], 1: 1, 2: beta}, suffix="_beta"))
        c_name = scaled
    return nodes + [binary(graph, node, product, c_name, BINARY_OPS["add"], out, suffix="_addc")]


# ---- Flatten, Concat, Identity, Dropout --------------------------------------------

@lowers("Flatten")
def flatten(graph: Graph, node: Node) -> list[Node]:
    out = graph.tensors[node.outputs[0]]
    if out.shape is None:
        raise fail(node, graph, "the output shape is unknown")
    if len(out.ncnn_shape) == 1:
        return [layer(node, graph, "Flatten", node.inputs[:1], [out.name])]
    if sum(d is None for d in out.ncnn_shape) > 1:       # sizes known only at run time
        return [_flatten_by_expression(graph, node)]
    return [reshape(graph, node, node.inputs[0], None, None, out=out.name)[0]]


def _flatten_by_expression(graph: Graph, node: Node) -> Node:
    from ..symbolic import extent, op
    from .tensor_ops import expressed_reshape
    x = graph.tensors[node.inputs[0]]
    axis = node.attrs.get("axis", 1) % x.rank if x.rank else 0
    outer, inner = 1, 1
    for i in range(x.rank):
        if i < axis:
            outer = op("*", outer, extent(graph, x.name, i))
        else:
            inner = op("*", inner, extent(graph, x.name, i))
    return expressed_reshape(graph, node, [outer, inner])


@lowers("Concat")
def concat(graph: Graph, node: Node) -> list[Node]:
    out = graph.tensors[node.outputs[0]]
    inputs = [i for i in node.inputs if i]
    axis = ncnn_axis(graph, node, out.name, int(node.attrs["axis"]))
    rank = len(out.ncnn_shape)
    operands = []
    for name in inputs:
        t = graph.tensors[name]
        if t.is_constant and out.batch_axis is not None:
            if t.value.ndim != out.rank or t.value.shape[out.batch_axis] != 1:
                raise fail(node, graph, f"constant input '{name}' {list(t.value.shape)} does not have the "
                                        f"output's rank {out.rank} with extent 1 at axis {out.batch_axis}")
            # a constant has no batch axis: drop the output's (extent-1) one from its value
            name = graph.add_constant(f"{name}_nobatch", np.squeeze(t.value, out.batch_axis)).name
        elif t.shape is None or len(t.ncnn_shape) != rank:
            raise fail(node, graph, f"input '{name}' {t.shape} (batch axis {t.batch_axis}) does not "
                                    f"have the output's layout {out.shape} (batch axis {out.batch_axis})")
        operands.append(name)
    # integers and bools are float numbers in ncnn (or int32 bits, which int_inputs.py tracks): a copy keeps them
    require_float(graph, node, [i for i in inputs if graph.tensors[i].dtype.kind not in "biu"])
    if len(operands) == 1:
        return [layer(node, graph, "Noop", operands, [out.name])]
    return [layer(node, graph, "Concat", operands, [out.name], {0: axis})]


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

"""Elementwise activations and unary math -> ncnn activation layers, UnaryOp and short chains.

Each op maps to one ncnn layer with the same formula (checked against the
layers' reference sources): ncnn's HardSigmoid/HardSwish take ONNX's alpha
and beta directly, ReLU's slope is LeakyRelu's alpha, UnaryOp round is
round-half-to-even like ONNX Round.

Softplus is BinaryOp logaddexp(x, 0), not ncnn's Softplus layer: the layer
computes log(exp(x) + 1) directly and returns inf above x = 88 (measured),
where logaddexp takes max + log1p(exp(min - max)) and stays finite.
PRelu becomes ncnn PReLU when the slope is one value or varies only along
ncnn's outermost axis; otherwise the exact form max(x, 0) + slope * min(x, 0).
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, new_tensor, optional_constant, require_float
from .elementwise import binary

UNARY = {"Abs": "abs", "Neg": "neg", "Floor": "floor", "Ceil": "ceil", "Sqrt": "sqrt", "Exp": "exp",
         "Log": "log", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
         "Reciprocal": "reciprocal", "Round": "round"}
FLT_MAX = float(np.finfo(np.float32).max)


def _one(graph: Graph, node: Node, type_: str, params: dict | None = None) -> list[Node]:
    require_float(graph, node)
    return [layer(node, graph, type_, node.inputs[:1], node.outputs[:1], params)]


# integers travel as floats: these give integers back, exact below 2**24 (T5's |j - i| positions)
INTEGER_EXACT = {"Abs", "Neg"}


@lowers(*UNARY)
def unary(graph: Graph, node: Node) -> list[Node]:
    if node.op in INTEGER_EXACT and graph.tensors[node.inputs[0]].dtype.kind in "iu":
        return [layer(node, graph, "UnaryOp", node.inputs[:1], node.outputs[:1], {0: UNARY_OPS[UNARY[node.op]]})]
    return _one(graph, node, "UnaryOp", {0: UNARY_OPS[UNARY[node.op]]})


@lowers("Atan")
def atan(graph: Graph, node: Node) -> list[Node]:
    """ncnn's atan gives NaN for +-inf (measured) but pi/2 for FLT_MAX: clamp first, so that an
    Atan of a division by zero (torch's atan2) gives +-pi/2 as in onnxruntime."""
    require_float(graph, node)
    x = graph.tensors[node.inputs[0]]
    finite = new_tensor(graph, f"{node.outputs[0]}_finite", x.shape, x.batch_axis)
    return [layer(node, graph, "Clip", node.inputs[:1], [finite], {0: -FLT_MAX, 1: FLT_MAX}, suffix="_finite"),
            layer(node, graph, "UnaryOp", [finite], node.outputs[:1], {0: UNARY_OPS["atan"]})]


@lowers("Relu")
def relu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "ReLU")


@lowers("LeakyRelu")
def leaky_relu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "ReLU", {0: float(node.attrs["alpha"])})


@lowers("Sigmoid")
def sigmoid(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "Sigmoid")


@lowers("Tanh")
def tanh(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "TanH")


@lowers("Clip")
def clip(graph: Graph, node: Node) -> list[Node]:
    if any(i and graph.value(i) is None for i in node.inputs[1:3]):
        return _clip_by_tensors(graph, node)
    low = optional_constant(graph, node, 1, "min (input 1)")
    high = optional_constant(graph, node, 2, "max (input 2)")
    for bound, what in ((low, "min"), (high, "max")):
        if bound is not None and bound.size != 1:
            raise fail(node, graph, f"{what} must be one value, got shape {list(bound.shape)}")
    low = node.attrs.get("min", -FLT_MAX) if low is None else float(low.reshape(-1)[0])
    high = node.attrs.get("max", FLT_MAX) if high is None else float(high.reshape(-1)[0])
    return _one(graph, node, "Clip", {0: max(float(low), -FLT_MAX), 1: min(float(high), FLT_MAX)})


def _clip_by_tensors(graph: Graph, node: Node) -> list[Node]:
    """Bounds computed at run time (a spectrogram's floor at its max - 80 dB): min(max(x, lo), hi)
    as BinaryOps, ONNX's order, so a lo above hi gives hi as onnxruntime does."""
    require_float(graph, node)
    x, out = graph.tensors[node.inputs[0]], node.outputs[0]
    bounds = [(i, op) for i, op in zip(node.inputs[1:3], ("max", "min")) if i]
    for name, _ in bounds:
        bound = graph.tensors[name]
        if bound.shape is not None and int(np.prod([d or 2 for d in bound.shape])) != 1:
            raise fail(node, graph, f"bound '{name}' must be one value, got shape {list(bound.shape)}")
    layers, current = [], x.name
    for k, (name, op) in enumerate(bounds):
        target = out if k == len(bounds) - 1 else new_tensor(graph, f"{out}_low", x.shape, x.batch_axis)
        layers.append(binary(graph, node, current, name, BINARY_OPS[op], target, suffix=f"_{op}"))
        current = target
    return layers


def _hard_params(graph: Graph, node: Node, alpha: float, beta: float) -> dict:
    # ncnn derives its linear range as [-beta/alpha, (1-beta)/alpha]: a rising slope only
    if not alpha > 0:
        raise fail(node, graph, f"alpha={alpha}: ncnn's {node.op} needs alpha > 0")
    return {0: alpha, 1: beta}


@lowers("HardSigmoid")
def hard_sigmoid(graph: Graph, node: Node) -> list[Node]:
    params = _hard_params(graph, node, float(node.attrs["alpha"]),
                          float(node.attrs["beta"]))
    return _one(graph, node, "HardSigmoid", params)


@lowers("HardSwish")
def hard_swish(graph: Graph, node: Node) -> list[Node]:
    # ONNX HardSwish(x) = x * HardSigmoid(x; alpha=1/6, beta=0.5)
    return _one(graph, node, "HardSwish", {0: 1.0 / 6.0, 1: 0.5})


@lowers("Elu")
def elu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "ELU", {0: float(node.attrs["alpha"])})


@lowers("Selu")
def selu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "SELU", {0: float(node.attrs["alpha"]),
                                      1: float(node.attrs["gamma"])})


@lowers("Erf")
def erf(graph: Graph, node: Node) -> list[Node]:
    return [layer(node, graph, "Erf", node.inputs[:1], node.outputs[:1])]


GELU_APPROXIMATIONS = {"none": 0, "tanh": 1}


@lowers("Gelu")
def gelu(graph: Graph, node: Node) -> list[Node]:
    approximate = node.attrs["approximate"]
    if approximate not in GELU_APPROXIMATIONS:
        raise fail(node, graph, f"approximate={approximate!r} is not one of {sorted(GELU_APPROXIMATIONS)}")
    return [layer(node, graph, "GELU", node.inputs[:1], node.outputs[:1],
                  {0: GELU_APPROXIMATIONS[approximate]})]


@lowers("Softplus")
def softplus(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "BinaryOp", {0: BINARY_OPS["logaddexp"], 1: 1, 2: 0.0})


@lowers("Softsign")
def softsign(graph: Graph, node: Node) -> list[Node]:
    """x / (1 + |x|)."""
    require_float(graph, node)
    x, out = node.inputs[0], node.outputs[0]
    t = graph.tensors[out]
    magnitude = new_tensor(graph, f"{out}_abs", t.shape, t.batch_axis)
    denominator = new_tensor(graph, f"{out}_den", t.shape, t.batch_axis)
    return [layer(node, graph, "UnaryOp", [x], [magnitude], {0: UNARY_OPS["abs"]}, suffix="_abs"),
            layer(node, graph, "BinaryOp", [magnitude], [denominator],
                  {0: BINARY_OPS["add"], 1: 1, 2: 1.0}, suffix="_den"),
            layer(node, graph, "BinaryOp", [x, denominator], [out], {0: BINARY_OPS["div"]})]


@lowers("Mish")
def mish(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "Mish")


@lowers("Celu")
def celu(graph: Graph, node: Node) -> list[Node]:
    return _one(graph, node, "CELU", {0: float(node.attrs["alpha"])})


@lowers("Shrink")
def shrink(graph: Graph, node: Node) -> list[Node]:
    # same formula as ONNX: x + bias below -lambd, x - bias above lambd, else 0
    return _one(graph, node, "Shrink", {0: float(node.attrs["bias"]),
                                        1: float(node.attrs["lambd"])})


@lowers("PRelu")
def prelu(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node, node.inputs[:2])
    x, out = graph.tensors[node.inputs[0]], node.outputs[0]
    if x.rank is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    slopes = _prelu_slopes(graph, node)
    if slopes is not None:
        return [layer(node, graph, "PReLU", [x.name], [out], {0: slopes.size}, [slopes])]
    return _binary_form(graph, node)


def _prelu_slopes(graph: Graph, node: Node) -> np.ndarray | None:
    """The slopes ncnn PReLU applies (one, or one per outermost ncnn index), or None."""
    x, value = graph.tensors[node.inputs[0]], graph.value(node.inputs[1])
    if value is None or value.ndim > x.rank:
        return None
    if value.size == 1:
        return value.astype(np.float32).reshape(1)
    aligned = value.reshape((1,) * (x.rank - value.ndim) + value.shape)
    outer = next((i for i in range(x.rank) if i != x.batch_axis), None)
    varying = [i for i, n in enumerate(aligned.shape) if n != 1]
    if varying != [outer]:
        return None
    return aligned.astype(np.float32).reshape(-1)


def _binary_form(graph: Graph, node: Node) -> list[Node]:
    x, slope, out = graph.tensors[node.inputs[0]], node.inputs[1], node.outputs[0]
    pos, neg, scaled = (new_tensor(graph, f"{out}_{s}", x.shape, x.batch_axis) for s in ("pos", "neg", "scaled"))
    return [layer(node, graph, "BinaryOp", [x.name], [pos], {0: BINARY_OPS["max"], 1: 1, 2: 0.0}, suffix="_pos"),
            layer(node, graph, "BinaryOp", [x.name], [neg], {0: BINARY_OPS["min"], 1: 1, 2: 0.0}, suffix="_neg"),
            binary(graph, node, neg, slope, BINARY_OPS["mul"], scaled, suffix="_scale"),
            binary(graph, node, pos, scaled, BINARY_OPS["add"], out, suffix="_sum")]



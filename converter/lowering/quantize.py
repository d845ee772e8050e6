"""QuantizeLinear / DequantizeLinear on activations -> float BinaryOp/UnaryOp/Clip chains.

Where a quantized pair cannot run as an ncnn int8 layer (passes/plan_int8.py decides),
it is emulated in float32, which reproduces onnxruntime exactly:
  QuantizeLinear    q = clip(round_half_even(x / s) + z, qmin, qmax)
  DequantizeLinear  y = (q - z) * s
The quantized tensor travels as float32 holding whole numbers (exact up to 2**24). ncnn's
UnaryOp round is nearbyintf under FE_TONEAREST (ties to even, as ONNX). Its BinaryOp div is
not a true division on x86 (the SIMD lanes give 2 / 2 = 0.99999994, measured), so x / s is
written x * (1 / s): exact where 1 / s is a float32 power of two; elsewhere x * (1 / s) can be
one ulp from x / s, and a value that close to a rounding tie lands one step off (a warning). DequantizeLinear of a constant (weights, biases) never gets here: it
folds to float weights, exactly.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from converter.ncnn_side.layers import BINARY_OPS
from converter.onnx_side.quantized_values import blocked_per_element

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, new_tensor, optional_constant, unary_chain
from .elementwise import binary

# the saturation range of each quantized type ONNX's QuantizeLinear writes
RANGES = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255),
          np.dtype(np.int16): (-32768, 32767), np.dtype(np.uint16): (0, 65535)}


def _per_axis(graph: Graph, node: Node, slot: int, what: str, default_dtype) -> np.ndarray:
    """A scale or zero point shaped to broadcast along the node's axis (one value stays a scalar)."""
    value = optional_constant(graph, node, slot, what)
    if value is None:
        return np.zeros((), default_dtype)
    block = int(node.attrs.get("block_size", 0))
    if block:        # one value per block of `block` elements along the axis: spread to every element
        shape = graph.tensors[node.inputs[0]].shape
        if shape is None or not shape or any(not isinstance(d, int) for d in shape):
            raise fail(node, graph, "blocked quantization (block_size) needs the input's static shape")
        return blocked_per_element(value, tuple(shape), int(node.attrs.get("axis", 1)), block)
    if value.size == 1:
        return value.reshape(())
    rank = graph.tensors[node.inputs[0]].rank
    axis = int(node.attrs.get("axis", 1)) % rank
    return value.reshape([-1 if k == axis else 1 for k in range(rank)])


def _step(graph: Graph, node: Node, x: str, value: np.ndarray, op: str, out: str | None,
          nodes: list[Node], stem: str | None = None) -> str:
    """Append op(x, value) (a constant operand) to `nodes`; returns the result's tensor. `stem` names
    the layer when the node lowers to several of one op."""
    stem = stem or op
    shape, batch = graph.tensors[node.outputs[0]].shape, graph.tensors[node.outputs[0]].batch_axis
    out = out or new_tensor(graph, f"{node.outputs[0]}_{stem}", shape, batch)
    operand = graph.add_constant(f"{node.name}_{stem}", np.asarray(value, np.float32)).name
    nodes.append(binary(graph, node, x, operand, BINARY_OPS[op], out, suffix=f"_{stem}"))
    return out


def _split(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """value = high + low in float32, each with at most 12 significant bits (Veltkamp's split)."""
    value = value.astype(np.float32)
    c = value * np.float32(4097)
    high = c - (c - value)
    return high, value - high


def _divided(graph: Graph, node: Node, scale: np.ndarray, reciprocal: np.ndarray, limits: tuple[int, int],
             zero: np.ndarray, nodes: list[Node]) -> str:
    """x / scale correctly rounded to float32, as onnxruntime divides, from ncnn's exact float32 multiply,
    add and subtract (its division is approximate on x86): q0 = x * (1/s); the remainder x - q0 * s
    exactly, with q0 and s split into 12-bit halves so every partial product is exact and each
    subtraction cancels to a representable value; then q0 + remainder * (1/s). Inputs are first clipped
    two steps beyond the saturation range, which changes no quantized value and keeps the split finite."""
    shape, batch = graph.tensors[node.outputs[0]].shape, graph.tensors[node.outputs[0]].batch_axis
    fresh = lambda stem: new_tensor(graph, f"{node.outputs[0]}_{stem}", shape, batch)     # noqa: E731

    def two(op: str, a: str, b: str, stem: str) -> str:
        out = fresh(stem)
        nodes.append(binary(graph, node, a, b, BINARY_OPS[op], out, suffix=f"_{stem}"))
        return out
    lo, hi = ((np.array(limits, np.float64)[:, None] - zero.astype(np.float64).reshape(1, -1) + [[-2], [2]])
              * np.abs(scale.astype(np.float64)).reshape(1, -1))
    bounded = fresh("bounded")
    nodes.append(layer(node, graph, "Clip", [node.inputs[0]], [bounded],
                       {0: float(lo.min()), 1: float(hi.max())}, suffix="_bound"))
    q0 = _step(graph, node, bounded, reciprocal, "mul", None, nodes, "q0")
    c = _step(graph, node, q0, np.float32(4097), "mul", None, nodes, "split")
    q_high = two("sub", c, two("sub", c, q0, "split_c"), "q_high")
    q_low = two("sub", q0, q_high, "q_low")
    s_high, s_low = _split(scale)
    rest = bounded
    for k, (part, s_part) in enumerate(((q_high, s_high), (q_high, s_low), (q_low, s_high), (q_low, s_low))):
        rest = two("sub", rest, _step(graph, node, part, s_part, "mul", None, nodes, f"partial{k}"), f"rest{k}")
    return two("add", q0, _step(graph, node, rest, reciprocal, "mul", None, nodes, "correction"), "quotient")


@lowers("QuantizeLinear")
def quantize_linear(graph: Graph, node: Node) -> list[Node]:
    scale = _per_axis(graph, node, 1, "the scale (input 1)", np.float32)
    # without a zero point, opset 21's output_dtype names the quantized type (uint8 by default)
    written = node.attrs.get("output_dtype", 0)
    zero = _per_axis(graph, node, 2, "the zero point (input 2)",
                     helper.tensor_dtype_to_np_dtype(written) if written else np.uint8)
    if zero.dtype not in RANGES:
        raise fail(node, graph, f"quantized type {zero.dtype} is not supported (int8, uint8, int16, uint16)")
    out = graph.tensors[node.outputs[0]]
    nodes: list[Node] = []
    reciprocal = (1 / scale.astype(np.float64)).astype(np.float32)
    inexact = np.any(reciprocal.astype(np.float64) * scale.astype(np.float64) != 1)
    if inexact and zero.dtype.itemsize == 2:
        # 16-bit steps are fine enough that x * (1 / s) would often sit an ulp across a .5 step
        scaled = _divided(graph, node, scale.astype(np.float32), reciprocal, RANGES[zero.dtype], zero, nodes)
    else:
        if inexact and graph.int8_mode == "exact":      # fast mode makes no claim to onnxruntime's steps
            graph.warnings.append(f"{node.describe()}: x / scale runs as x * (1 / scale) in ncnn (its division "
                                  "is approximate on x86); an input within an ulp of a rounding tie may quantize "
                                  "one step off onnxruntime")
        scaled = _step(graph, node, node.inputs[0], reciprocal, "mul", None, nodes)
    rounded = new_tensor(graph, f"{out.name}_round", out.shape, out.batch_axis)
    nodes += unary_chain(node, graph, scaled, rounded, ["round"])
    if np.any(zero != 0):
        rounded = _step(graph, node, rounded, zero.astype(np.float32), "add", None, nodes)
    lo, hi = RANGES[zero.dtype]
    nodes.append(layer(node, graph, "Clip", [rounded], [out.name], {0: float(lo), 1: float(hi)}, suffix="_clip"))
    out.dtype = np.dtype(np.float32)       # whole numbers held as float32 from here on
    return nodes


@lowers("DequantizeLinear")
def dequantize_linear(graph: Graph, node: Node) -> list[Node]:
    scale = _per_axis(graph, node, 1, "the scale (input 1)", np.float32)
    zero = _per_axis(graph, node, 2, "the zero point (input 2)", np.uint8)
    quantized = graph.tensors[node.inputs[0]].dtype
    for dtype in (zero.dtype, quantized):
        if dtype is not None and dtype.kind not in "iuf":       # float8, int4 (numpy kind V)
            raise fail(node, graph, f"quantized type {dtype} is not supported (int8, uint8, int16, uint16)")
    nodes: list[Node] = []
    x = node.inputs[0]
    if np.any(zero != 0):
        x = _step(graph, node, x, zero.astype(np.float32), "sub", None, nodes)
    _step(graph, node, x, scale, "mul", node.outputs[0], nodes)
    return nodes

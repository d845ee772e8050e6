"""Turn the lowered layers passes/plan_int8.py planned into ncnn int8 layers.

The layer reads the float tensor before the QuantizeLinear/DequantizeLinear pair and
quantizes it itself (or the pair's output, where float layers keep the pair running anyway or an
average pooling makes ties); its weights become int8 with ncnn's scales (1/ONNX scale) after
them (8=int8_scale_term). The lowered float weight must still be exactly the dequantized
int8 weight (a fusion that changed it keeps the layer in float). Pairs nothing else
reads die in eliminate_dead. Returns how many layers run int8 and every quantized node
that runs in float, with its reason.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node

from .plan_int8 import ActivationPair, Int8Plan

INT8_LAYERS = {"Convolution", "ConvolutionDepthWise", "InnerProduct"}
AVERAGING, AVERAGE = {"Pooling", "Pooling1D", "Pooling3D"}, 1
# fast mode keeps these in float: measured with the pip runtime (1.0.20261020, x86 AVX2 and AVX-512, one
# thread), int8 ConvolutionDepthWise takes 1.2-5x its fp32 time at almost every MobileNetV2 / PP-OCRv4 shape
# on AVX2, also reading and writing int8 (scripts/int8_layer_profile.py): x86 has no AVX int8 depthwise
# kernel (8 lanes of SSE int16 products, the output scales recomputed per pixel) against fp32's AVX ones
FAST_FLOAT = {"ConvolutionDepthWise": "fast mode: real ncnn's x86 int8 depthwise convolution is slower than "
                                      "its fp32 form, so it runs in float"}
# likewise an InnerProduct over the rows of a 2-D blob (a transformer's projections): x86 int8 runs it row by
# row, fp32 as one Gemm (passes/convert_innerproduct_gemm.py); PP-OCRv4 rec at 48x320 0.76x fp32 with them
# int8, 1.08x without
# and a small Convolution over fewer than 8 input channels (an image stem, no channel packing for int8):
# alone, YOLOv8n's 3 -> 16 3x3 stem at 320x320 takes 3.3 ms int8 against 2.1 ms fp32, PP-OCRv4 det's at
# 640x640 16.1 against 12.4, while ResNet-18's 7x7 one (147 products per output) is 1.09x faster in int8;
# and any Convolution summing at most 32 products per output (a 1x1 over <= 32 channels): its int8 gemm
# saves less than quantizing the input and dequantizing the output cost (scripts/int8_layer_profile.py,
# int8 / fp32 alone: MobileNetV2's 1x1 16x112x112 -> 96 1.6-1.9, 24x56x56 -> 144 1.06, 32x112x112 -> 16
# 1.1, PP-OCRv4 det's 12x160x160 -> 96 1.9, 16x320x320 -> 32 1.5, 32x160x160 -> 48 1.2-1.4; at 32 it is
# close (YOLOv8n's 32x80x80 -> 32 0.84, rec's 32x24x160 -> 64 0.97); from 64 products on int8 is mostly
# faster: 0.45-0.86 on MobileNetV2)
FEW_CHANNELS, FEW_PRODUCTS, SHORT_SUM = 8, 64, 32
FEW_FLOAT = ("fast mode: real ncnn's x86 int8 convolution with few products per output (at most 32, or fewer "
             "than 8 input channels and a small kernel) is slower than fp32")
ROWS_FLOAT = ("fast mode: real ncnn's x86 int8 InnerProduct over rows is slower than the fp32 Gemm it "
              "becomes, so it runs in float")


def _reciprocal(scales: np.ndarray) -> np.ndarray:
    """ncnn's scale (q = x * scale); 0 stays 0, which ncnn reads as 'this output is zero'."""
    scales = np.asarray(scales, np.float32)
    return np.divide(np.float32(1), scales, out=np.zeros_like(scales), where=scales != 0)


def int8_weights(node: Node, plan: Int8Plan, fast: bool = False) -> tuple[list[np.ndarray] | None, int, str | None]:
    """(new weights, int8_scale_term, why not) for a lowered float layer; `fast`: a weight a fusion scaled
    per output (a BatchNorm or an affine Mul folded in once the pairs between were dropped) keeps its int8
    values with new scales."""
    outputs = int(node.params[0])
    if plan.weight_scales.size != outputs:
        return None, 0, f"{plan.weight_scales.size} weight scales for {outputs} outputs"
    w = np.asarray(node.weights[0], np.float32).reshape(outputs, -1)
    scales = plan.weight_scales.reshape(outputs, 1)
    q = np.round(np.divide(w, scales, out=np.zeros_like(w), where=scales != 0))
    weight_scales = plan.weight_scales
    if np.abs(q).max(initial=0) > 127 or not np.array_equal(q.astype(np.float32) * scales, w):
        rescaled = _rescaled(w, plan.weight_q) if fast else None
        if rescaled is None:
            return None, 0, "the weight is no longer the dequantized int8 weight (changed by a fusion)"
        q, weight_scales = rescaled
    layer_scales, term = _reciprocal(weight_scales), 1
    if node.op == "ConvolutionDepthWise":      # ncnn keeps one weight scale per group
        group = int(node.params.get(7, 1))
        if group != outputs:
            # measured with the pip runtime: a grouped (not depthwise) int8 ConvolutionDepthWise, one
            # scale per group as its load_model reads them, comes out several units off on x86
            return None, 0, "real ncnn's int8 group convolution (several channels per group) computes wrong values"
        per_group = layer_scales.reshape(group, -1)
        if np.any(per_group != per_group[:, :1]):
            return None, 0, "ncnn's int8 ConvolutionDepthWise has one weight scale per group"
        layer_scales = per_group[:, 0]
    bottom = _reciprocal(np.array([plan.input_scale]))
    return [q.astype(np.int8).ravel(), *node.weights[1:], layer_scales, bottom], term, None


def _rescaled(w: np.ndarray, q: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 values, scale per output) with q * scale == w up to float rounding (1e-6 of each row's peak),
    where a fusion multiplied each output row of the dequantized int8 weight q by one factor; else None."""
    if q is None or q.shape != w.shape:
        return None
    q = q.astype(np.float64)
    norms = (q * q).sum(1)
    factor = np.divide((w * q).sum(1), norms, out=np.zeros(len(w)), where=norms > 0)
    q = q * np.where(factor < 0, -1.0, 1.0)[:, None]         # a negative factor: the row's signs flip
    factor = np.abs(factor)
    peak = np.abs(w).max(1)
    if np.any(np.abs(q * factor[:, None] - w).max(1) > 1e-6 * peak) or np.any((peak > 0) & (factor == 0)):
        return None
    return q, factor.astype(np.float32)


def _fast_float(graph: Graph, node: Node) -> str | None:
    """Why fast mode keeps a planned layer in float: where real ncnn's x86 int8 kernel is slower."""
    if node.op in FAST_FLOAT:
        return FAST_FLOAT[node.op]
    shape = graph.tensors[node.inputs[0]].ncnn_shape if node.op == "InnerProduct" else None
    if shape is not None and (len(shape) > 1 and shape[0] != 1):
        return ROWS_FLOAT
    taps = int(node.params.get(1, 1)) * int(node.params.get(11, node.params.get(1, 1)))
    per_output = np.asarray(node.weights[0]).size // max(int(node.params[0]), 1)      # input channels x taps
    if node.op == "Convolution" and (per_output <= SHORT_SUM or (per_output < FEW_CHANNELS * taps and
                                                                  per_output < FEW_PRODUCTS)):
        return FEW_FLOAT
    return None


def _averages(node: Node | None) -> bool:
    """An average pooling layer (ncnn's Pooling with pooling_type 1)."""
    return node is not None and node.op in AVERAGING and int(node.params.get(0, 0)) == AVERAGE


def apply_int8(graph: Graph) -> dict:
    plans = graph.int8_plans
    if not plans:
        return {}
    fallbacks, quantized = dict(graph.int8_fallbacks), []
    fast = graph.int8_mode == "fast"
    for node in graph.topological():
        plan = plans.get(node.origin) if node.ncnn else None
        if not isinstance(plan, Int8Plan) or node.op not in INT8_LAYERS:
            continue
        if node.inputs[0] != plan.dq_out:
            fallbacks[node.origin] = f"lowered to {node.op} on a reshaped input"
            continue
        why = _fast_float(graph, node) if fast else None
        if why:
            fallbacks[node.origin] = why
            continue
        weights, term, why = int8_weights(node, plan, fast)
        if why:
            fallbacks[node.origin] = why
            continue
        node.weights, node.params[8] = weights, term
        quantized.append((node, plan))
    converted = {node.name for node, _ in quantized}
    for node, plan in quantized:
        # the int8 layer reads the pair's output, values on the quantizer's lattice that ncnn quantizes
        # back to the same steps, so its rounding (ties away from zero) never meets a tie, where the
        # pair's layers run anyway (float layers read it too) or where ties are the rule: an average
        # of steps (average pooling) lands on half steps; in fast mode always x, its pair dropped
        others = [c for c in graph.consumers(plan.dq_out) if c.name not in converted]
        if fast or (not others and plan.dq_out not in graph.outputs and not _averages(graph.producer(plan.x))):
            graph.replace_input(node, 0, plan.x)
    if fast:         # planned layers that stayed float (a fusion, a reshape, a kernel slower in int8) read x too
        for plan in {id(p): p for p in plans.values() if isinstance(p, Int8Plan)}.values():
            for reader in [c for c in graph.consumers(plan.dq_out) if c.name not in converted]:
                for slot in [k for k, i in enumerate(reader.inputs) if i == plan.dq_out]:
                    graph.replace_input(reader, slot, plan.x)
    count = len(quantized)
    for name, pair in plans.items():
        floats = [c for c in graph.consumers(pair.dq_out) if c.name not in converted] if isinstance(pair, ActivationPair) else []
        if isinstance(pair, ActivationPair) and (floats or pair.dq_out in graph.outputs):
            readers = sorted({c.origin or c.name for c in floats})[:3]
            what = f"read by non-int8 layers: {', '.join(readers)}" if readers else "a graph output"
            fallbacks[pair.quantizer] = f"Q/DQ pair emulated in float32 ({what})"
    return {"int8_layers": count, "int8_fallbacks": fallbacks, "int8_mode": graph.int8_mode,
            **({"int8_dropped": dict(graph.int8_dropped)} if fast else {})}

"""Fold an inference BatchNormalization into the Conv or Gemm that feeds it (ONNX level).

BN(y) = s * y + t with s = scale / sqrt(var + eps), t = bias - s * mean, per
channel (ONNX axis 1). When y is produced by a Conv or Gemm with constant
weights and only the BN reads y, s scales the producer's output channels and
t joins its bias; the BN disappears. One walk over the BN nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node


def _bn_affine(graph: Graph, bn: Node) -> tuple[np.ndarray, np.ndarray] | None:
    if bn.attrs.get("training_mode", 0) or any(o and graph.use_count(o) for o in bn.outputs[1:]):
        return None
    values = [graph.value(i) for i in bn.inputs[1:5]]
    if len(values) != 4 or any(v is None for v in values):
        return None
    scale, bias, mean, var = (v.astype(np.float64).ravel() for v in values)
    if not scale.size == bias.size == mean.size == var.size:
        return None            # inconsistent: lowering names the node
    s = scale / np.sqrt(var + float(bn.attrs["epsilon"]))
    return s, bias - s * mean


def _fold_conv(graph: Graph, conv: Node, s: np.ndarray, t: np.ndarray) -> list[str] | None:
    weight = graph.value(conv.inputs[1])
    bias = graph.value(conv.inputs[2]) if len(conv.inputs) > 2 and conv.inputs[2] else None
    if weight is None or (len(conv.inputs) > 2 and conv.inputs[2] and bias is None) \
            or weight.shape[0] != len(s) or (bias is not None and bias.size not in (1, len(s))) \
            or len(conv.inputs) > 3:
        return None            # not a plain conv: its lowering says what is wrong
    b = np.zeros(len(s)) if bias is None else bias.astype(np.float64)
    w = weight.astype(np.float64) * s.reshape((-1,) + (1,) * (weight.ndim - 1))
    return [conv.inputs[0], graph.add_constant(f"{conv.inputs[1]}_bn", w.astype(weight.dtype)).name,
            graph.add_constant(f"{conv.name}_bias_bn", (b * s + t).astype(weight.dtype)).name]


def _fold_gemm(graph: Graph, gemm: Node, s: np.ndarray, t: np.ndarray) -> list[str] | None:
    b = graph.value(gemm.inputs[1])
    has_c = len(gemm.inputs) > 2 and bool(gemm.inputs[2])
    c = graph.value(gemm.inputs[2]) if has_c else None
    if b is None or (has_c and c is None) or gemm.attrs["transA"]:
        return None
    trans_b = gemm.attrs["transB"]
    if (b.shape[0] if trans_b else b.shape[1]) != len(s):
        return None
    b_new = b.astype(np.float64) * (s[:, None] if trans_b else s[None, :])
    # beta * C' = s * (beta * C) + t; C' is stored with beta folded in, and beta set to 1
    beta = float(gemm.attrs["beta"])
    c_new = t if c is None else s * beta * c.astype(np.float64) + t
    gemm.attrs["beta"] = 1.0
    return [gemm.inputs[0], graph.add_constant(f"{gemm.inputs[1]}_bn", b_new.astype(b.dtype)).name,
            graph.add_constant(f"{gemm.name}_c_bn", c_new.astype(b.dtype)).name]


FOLDERS = {"Conv": _fold_conv, "Gemm": _fold_gemm}


def fuse_conv_batchnorm(graph: Graph) -> dict:
    fused = 0
    for bn in [n for n in graph.topological() if n.op == "BatchNormalization" and not n.ncnn]:
        producer = graph.producer(bn.inputs[0])
        if producer is None or producer.op not in FOLDERS or producer.ncnn \
                or graph.use_count(bn.inputs[0]) != 1:
            continue
        affine = _bn_affine(graph, bn)
        if affine is None:
            continue
        inputs = FOLDERS[producer.op](graph, producer, *affine)
        if inputs is None:
            continue
        graph.fold_into_producer(producer, bn, inputs=inputs, outputs=[bn.outputs[0]])
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"conv_bn_fused": fused}

"""Fold an inference BatchNormalization into the Conv or Gemm that feeds it (ONNX level).

BN(y) = s * y + t with s = scale / sqrt(var + eps), t = bias - s * mean, per
channel (ONNX axis 1). When y is produced by a Conv or Gemm with constant
weights and only the BN reads y, s scales the producer's output channels and
t joins its bias; the BN disappears. One walk over the BN nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.channel_affine import fold_into_conv, fold_into_gemm


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


FOLDERS = {"Conv": fold_into_conv, "Gemm": fold_into_gemm}


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

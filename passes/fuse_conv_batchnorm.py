"""Fold an inference BatchNormalization into the Conv or Gemm that feeds it (ONNX level).

BN(y) = s * y + t with s = scale / sqrt(var + eps), t = bias - s * mean, per
channel (ONNX axis 1). When y is produced by a Conv or Gemm with constant
weights and only the BN reads y, s scales the producer's output channels and
t joins its bias; the BN disappears. One walk over the BN nodes.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, apply, need, rule
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


def _match(graph: Graph, bn: Node) -> Match:
    producer = graph.producer(bn.inputs[0])
    need(producer is not None and producer.op in FOLDERS and not producer.ncnn,
         "the input is not written by a Conv or a Gemm")
    need(graph.use_count(bn.inputs[0]) == 1, f"the {producer.op}'s output is read elsewhere too")
    affine = _bn_affine(graph, bn)
    need(affine is not None, "training mode, or statistics that are not constants of one size")
    inputs = FOLDERS[producer.op](graph, producer, *affine)
    need(inputs is not None, f"the {producer.op}'s weights cannot take the scale (not constants, or grouped apart)")
    return Match([bn, producer], producer=producer, inputs=inputs, out=bn.outputs[0])


def _build(graph: Graph, m: Match) -> list[Node]:
    return [replace(m.producer, inputs=m.inputs, outputs=[m.out])]


RULE = rule("fuse_conv_batchnorm", "conv_bn_fused", "BatchNormalization", _match, _build)


def fuse_conv_batchnorm(graph: Graph) -> dict:
    return apply(graph, RULE)

"""Emulate ncnn's fp16 storage (what ARM devices run by default) in the interpreter.

Emulated: every blob a layer writes, and every float input, is rounded to float16 and
back, as ncnn stores blobs between layers in fp16; weights ncnn keeps in a tagged
buffer (the ones `convert --fp16` writes as fp16) are rounded the same way. Not
emulated: fp16 arithmetic inside a layer (sums and products are still float32), the
order of its accumulation, and layers ncnn keeps in fp32 on a given CPU (a layer
without fp16 support takes an fp32 copy of its input, so rounding it costs nothing).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from converter.ncnn_side.layers import SPECS

from ..ir import Node


def round_fp16(value):
    """float32 -> float16 -> float32: magnitudes over 65504 become inf, under 2**-24 zero."""
    if isinstance(value, tuple):
        return tuple(round_fp16(v) for v in value)
    array = np.asarray(value)
    if array.dtype != np.float32:
        return value            # int32 bits (Embed's word indices) are not numbers to round
    return array.astype(np.float16).astype(np.float32)


def fp16_weights(node: Node) -> Node:
    """A copy of the layer whose tagged weights hold the values ncnn's fp16 storage keeps."""
    spec = SPECS.get(node.op)
    if spec is None or not node.weights:
        return node
    try:
        layout = spec.weight_layout(node.params)
        params = spec.resolve(node.params)
    except Exception:            # the layer's own binding reports bad params
        return node
    if len(layout) != len(node.weights):
        return node
    weights = [round_fp16(np.asarray(w, np.float32)) if s.tagged(params) else w
               for s, w in zip(layout, node.weights)]
    return replace(node, weights=weights)


def rounding_outputs(call: Callable) -> Callable:
    """`call`, its output blob(s) rounded as fp16 storage holds them."""
    def rounded(*inputs, **kwargs):
        return round_fp16(call(*inputs, **kwargs))
    return rounded

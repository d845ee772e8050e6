"""Convolution / ConvolutionDepthWise / Deconvolution with dynamic_weight=1: the weight (and the
bias, with bias_term) arrive as the second (and third) bottom blob instead of the .bin.

ncnn reads the kernel size from the weight blob's w and h, the output count from its c
(convolutions: (out, in/group, kh, kw)) or d times group (deconvolutions: (in, out/group,
kh, kw), ONNX's layout, which it transposes per group itself), and flattens the blobs. The step builds the static
layer's step from those values for each call.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..registry import fail, shape_str


def dynamic_step(p, build: Callable, transposed: bool = False) -> Callable:
    def step(x, weight, *bias):
        if weight.ndim != 4:
            fail(f"dynamic weight {shape_str(weight)}: ncnn reads a 4-D blob (out, in, kh, kw)")
        if bool(bias) != bool(p.bias_term):
            fail(f"bias_term={p.bias_term} with {len(bias)} bias blob(s)")
        q = type(p)(p)
        group = p.get("group", 1)
        out_c = weight.shape[1] * group if transposed else weight.shape[0]
        q.update(num_output=out_c, kernel_h=weight.shape[2], kernel_w=weight.shape[3],
                 weight_data_size=weight.size, dynamic_weight=0)
        if transposed:      # ONNX (in, out/group, kh, kw) -> per group the static (out, in, kh, kw)
            cin, og = weight.shape[:2]
            if cin % group:
                fail(f"dynamic weight {shape_str(weight)} does not split into {group} groups")
            weight = weight.reshape(group, cin // group, og, *weight.shape[2:]).transpose(0, 2, 1, 3, 4)
        weights = [np.ascontiguousarray(weight, np.float32).ravel()]
        if bias:
            if bias[0].size != out_c:
                fail(f"bias {shape_str(bias[0])} for {out_c} outputs")
            weights.append(bias[0].astype(np.float32).ravel())
        return build(q, weights)(x)
    return step

"""Convolution1D, ConvolutionDepthWise1D and Deconvolution1D: the 2-D layers on a 1xK kernel.

A 1-D layer's input is (channels, length); ncnn's 1-D sources are its 2-D ones with
the h axis dropped (same weight layout, SAME pads, pad_value, fused activation and
border cut), so each kernel here runs the 2-D code on a (channels, 1, length) view.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import Params

from ..registry import fail, kernel, shape_str
from .convolution import SAME_LOWER, SAME_UPPER, grouped_conv
from .deconvolutiondepthwise import grouped_deconvolution


def as_2d(p, **extra) -> Params:
    """The 2-D layer's params for a 1-D layer: a height-1 kernel, stride and dilation 1,
    and the h pads SAME exactly when ncnn's 1-D layer pads SAME (both w pads say so)."""
    if max(p.pad_left, p.pad_right) > 0 and min(p.pad_left, p.pad_right) < 0:
        fail(f"pad_left {p.pad_left} with pad_right {p.pad_right}: ncnn fails or computes garbage "
             f"when a positive pad meets a negative one")
    same = p.pad_left if p.pad_left == p.pad_right and p.pad_left in (SAME_UPPER, SAME_LOWER) else 0
    return Params({**p, "kernel_h": 1, "stride_h": 1, "dilation_h": 1, "pad_top": same, "pad_bottom": same,
                   "int8_scale_term": 0, **extra})


def as_image(x: np.ndarray) -> np.ndarray:
    """The (channels, 1, length) view of a 1-D layer's input; ncnn reads a 1-D blob as one channel."""
    if x.ndim not in (1, 2):
        fail(f"input has shape {shape_str(x)}; ncnn's 1-D layers read rank 1 or 2 only")
    return x.reshape(x.shape[0] if x.ndim == 2 else 1, 1, x.shape[-1])


def _refuse_dynamic_weight(p, op: str) -> None:
    if p.dynamic_weight:
        fail(f"dynamic_weight {op} is not supported by the interpreter")


def _conv1d_step(p, weights, group: int, op: str):
    _refuse_dynamic_weight(p, op)
    step2d = grouped_conv(as_2d(p), weights, group)

    def step(x):
        return step2d(as_image(x))[:, 0, :]
    return step


@kernel("Convolution1D", prepare=True)
def convolution1d(p, weights):
    return _conv1d_step(p, weights, 1, "Convolution1D")


@kernel("ConvolutionDepthWise1D", prepare=True)
def convolution_depthwise1d(p, weights):
    if p.group < 1 or p.num_output % p.group:
        fail(f"num_output {p.num_output} does not split into {p.group} groups; ncnn refuses to load it")
    return _conv1d_step(p, weights, p.group, "ConvolutionDepthWise1D")


@kernel("Deconvolution1D")
def deconvolution1d(p, weights, x):
    _refuse_dynamic_weight(p, "Deconvolution1D")
    p2d = as_2d(p, output_pad_bottom=0, output_h=1 if p.output_w > 0 else 0)
    return grouped_deconvolution(p2d, weights, as_image(x), 1)[:, 0, :]

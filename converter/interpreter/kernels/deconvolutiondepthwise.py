"""DeconvolutionDepthWise: grouped (and depthwise) transposed convolution.

ncnn stores the weight per group as (out_c/group, in_c/group, kh, kw) and
scatters each input pixel times the kernel into the output, like
Deconvolution; then it cuts the pads (or, with output_w/h, the SAME border).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank
from .convolution import place_deconv_taps
from .dynamic_weight import dynamic_step


def grouped_deconvolution(p, weights, x: np.ndarray, group: int) -> np.ndarray:
    require_rank(x, 3)
    if p.int8_scale_term:
        fail("int8 deconvolution is not supported by the interpreter")
    if p.dynamic_weight:
        fail("dynamic_weight deconvolution is not supported by the interpreter")
    channels, h, w = x.shape
    kh, kw, out_c = p.kernel_h, p.kernel_w, p.num_output
    if group < 1 or channels % group or out_c % group:
        fail(f"{channels} input / {out_c} output channels do not split into {group} groups")
    cg, og = channels // group, out_c // group
    if weights[0].size != out_c * cg * kh * kw:
        fail(f"weight has {weights[0].size} values, expected {out_c}x{cg}x{kh}x{kw} "
             f"for {channels} input channels in {group} groups")
    # one batched product gives every input pixel's kernel-sized patch, per group
    wmat = weights[0].reshape(group, og, cg, kh, kw).transpose(0, 3, 4, 1, 2).reshape(group, kh * kw * og, cg)
    patches = np.matmul(wmat, x.reshape(group, cg, h * w)).reshape(group, kh, kw, og, h, w)
    return place_deconv_taps(p, weights, patches.transpose(1, 2, 0, 3, 4, 5).reshape(kh, kw, out_c, h, w))


@kernel("DeconvolutionDepthWise")
def deconvolution_depthwise(p, weights, x, *dynamic):
    if p.dynamic_weight:
        build = lambda q, w: lambda xx: grouped_deconvolution(q, w, xx, q.group)  # noqa: E731
        return dynamic_step(p, build, transposed=True)(x, *dynamic)
    return grouped_deconvolution(p, weights, x, p.group)

"""ConvolutionDepthWise3D (convolutiondepthwise3d.cpp): a grouped Convolution3D. The weight is
(group, out/group, in/group, kd, kh, kw) and each group convolves its own slice of channels."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank, shape_str
from .convolution3d import convolution3d


@kernel("ConvolutionDepthWise3D")
def convolution_depthwise3d(p, weights, x):
    require_rank(x, 4)
    group, channels, out_c = p.group, x.shape[0], p.num_output
    if group < 1 or channels % group or out_c % group:
        fail(f"{channels} input / {out_c} output channels of {shape_str(x)} do not split into {group} groups")
    cg, og = channels // group, out_c // group
    q = type(p)(p)
    q["num_output"] = og
    w = weights[0].reshape(group, -1)
    outs = []
    for g in range(group):
        part = [w[g]] + ([weights[1][g * og:(g + 1) * og]] if p.bias_term else [])
        outs.append(convolution3d(q, part, x[g * cg:(g + 1) * cg]))
    return np.concatenate(outs, axis=0)

"""ConvolutionDepthWise3D (convolutiondepthwise3d.cpp): a grouped Convolution3D. The weight is
(group, out/group, in/group, kd, kh, kw) and each group convolves its own slice of channels."""
from __future__ import annotations

from ..registry import kernel
from .convolution3d import by_group, convolution3d


@kernel("ConvolutionDepthWise3D")
def convolution_depthwise3d(p, weights, x):
    return by_group(p, weights, x, convolution3d)

"""Deconvolution3D (deconvolution3d.cpp) and DeconvolutionDepthWise3D, the same per group
(weight (group, out/group, in/group, kd, kh, kw)).

Deconvolution3D: each input voxel scatters weight * value into a
kernel-sized patch of the full output ((n - 1) * stride + extent + output_pad per axis, filled
with the bias first), then the fused activation, then the pads are cut. The weight is
(out, in, kd, kh, kw). Only explicit (non-negative) pads are run: the output_w/h/d SAME
codes are refused."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank, shape_str
from .activation import fused_activation
from .convolution3d import AXES, by_group, per_axis

F32 = np.float32


@kernel("Deconvolution3D")
def deconvolution3d(p, weights, x):
    require_rank(x, 4)
    kernel_, stride, dilation = per_axis(p, "kernel"), per_axis(p, "stride"), per_axis(p, "dilation")
    out_pad = (p.output_pad_behind, p.output_pad_bottom, p.output_pad_right)
    channels, out_c = x.shape[0], p.num_output
    if weights[0].size != out_c * channels * int(np.prod(kernel_)):
        fail(f"weight has {weights[0].size} values, expected {out_c}x{channels}x"
             f"{'x'.join(map(str, kernel_))} for input {shape_str(x)}")
    pads = ((p.pad_front, p.pad_behind), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right))
    if min(sum(pads, ())) < 0:
        fail(f"Deconvolution3D pads {pads}: only explicit non-negative pads are supported")
    sizes = x.shape[1:]
    full = [(n - 1) * s + dl * (k - 1) + 1 + op for n, s, dl, k, op in zip(sizes, stride, dilation, kernel_, out_pad)]
    out = np.empty((out_c, *full), F32)
    out[...] = weights[1].reshape(-1, 1, 1, 1) if p.bias_term else F32(0)
    w = weights[0].reshape(out_c, channels, *kernel_)
    flat = x.reshape(channels, -1)
    for kz in range(kernel_[0]):
        for ky in range(kernel_[1]):
            for kx in range(kernel_[2]):
                patch = (w[:, :, kz, ky, kx] @ flat).reshape(out_c, *sizes)
                offsets = (kz * dilation[0], ky * dilation[1], kx * dilation[2])
                index = tuple(slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offsets, sizes, stride))
                out[(slice(None), *index)] += patch
    out = fused_activation(out, p.activation_type, p.activation_params)
    (f, b), (t, bo), (le, r) = pads
    cut = out[:, f:full[0] - b, t:full[1] - bo, le:full[2] - r]
    if 0 in cut.shape:
        fail(f"cutting pads {pads} from a {'x'.join(map(str, full))} output leaves nothing ({AXES})")
    return np.ascontiguousarray(cut)


@kernel("DeconvolutionDepthWise3D")
def deconvolution_depthwise3d(p, weights, x):
    return by_group(p, weights, x, deconvolution3d)

"""Convolution3D and Pooling3D on (c, d, h, w) blobs (convolution3d.cpp, pooling3d.cpp).

Both follow their 2-D layers axis by axis (d, h, w), so the helpers here take one value
per spatial axis. One quirk of ncnn's sources: SAME_LOWER pads (-234, pad_mode 3) put
the odd pixel first on h and w but last on d, like SAME_UPPER.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank, shape_str
from .activation import fused_activation
from .convolution import SAME_LOWER, SAME_UPPER, output_extent, same_pads

F32 = np.float32
AXES = ("d", "h", "w")
FLT_MAX = F32(np.finfo(np.float32).max)


def per_axis(p, name: str) -> tuple[int, int, int]:
    """A d, h, w param triple: per_axis(p, 'kernel') is (kernel_d, kernel_h, kernel_w)."""
    return tuple(p[f"{name}_{a}"] for a in AXES)


def param_pads(p) -> tuple[tuple[int, int], ...]:
    return ((p.pad_front, p.pad_behind), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right))


def same_pads_3d(sizes, extents, strides, lower: bool) -> tuple[tuple[int, int], ...]:
    """SAME border per axis; ncnn's SAME_LOWER still puts d's odd pixel last."""
    return tuple(same_pads(n, e, s, lower and axis != 0)
                 for axis, (n, e, s) in enumerate(zip(sizes, extents, strides)))


def pad_3d(x: np.ndarray, pads, value) -> np.ndarray:
    if not any(a or b for a, b in pads):
        return x
    return np.pad(x, ((0, 0), *pads), constant_values=F32(value))


def windows(x: np.ndarray, kernel, stride, dilation=(1, 1, 1)) -> np.ndarray:
    """The (c, kd, kh, kw, od, oh, ow) view of every kernel window of a padded (c, d, h, w) x."""
    out = [output_extent(n, k, s, dl) for n, k, s, dl in zip(x.shape[1:], kernel, stride, dilation)]
    sc, *spatial = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (x.shape[0], *kernel, *out),
        (sc, *(st * dl for st, dl in zip(spatial, dilation)), *(st * s for st, s in zip(spatial, stride))),
        writeable=False)


@kernel("Convolution3D")
def convolution3d(p, weights, x):
    require_rank(x, 4)
    kernel_, stride, dilation = per_axis(p, "kernel"), per_axis(p, "stride"), per_axis(p, "dilation")
    channels, taps = x.shape[0], int(np.prod(kernel_))
    if weights[0].size != p.num_output * channels * taps:
        fail(f"weight has {weights[0].size} values, expected {p.num_output}x{channels}x"
             f"{'x'.join(map(str, kernel_))} for input {shape_str(x)}")
    flat = sum(param_pads(p), ())
    if any(v > 0 for v in flat):
        if any(v < 0 for v in flat):
            fail(f"pads {flat} mix positive and negative values; ncnn pads garbage")
        pads = param_pads(p)
    elif len(set(flat)) == 1 and flat[0] in (SAME_UPPER, SAME_LOWER):
        extents = [dl * (k - 1) + 1 for k, dl in zip(kernel_, dilation)]
        pads = same_pads_3d(x.shape[1:], extents, stride, flat[0] == SAME_LOWER)
    else:
        pads = ((0, 0),) * 3
    view = windows(pad_3d(x, pads, p.pad_value), kernel_, stride, dilation)
    out_shape = view.shape[4:]
    columns = view.reshape(channels * taps, -1)           # copies the windows once
    out = (weights[0].reshape(p.num_output, channels * taps) @ columns).reshape(p.num_output, *out_shape)
    if p.bias_term:
        out += weights[1].reshape(-1, 1, 1, 1)
    return fused_activation(out, p.activation_type, p.activation_params)


def by_group(p, weights, x, layer):
    """A grouped 3-D layer as `layer` run on each group's slice of channels, weight and bias
    (weight (group, out/group, ...), in ncnn's depthwise 3-D layers' layout)."""
    require_rank(x, 4)
    group, channels, out_c = p.group, x.shape[0], p.num_output
    if group < 1 or channels % group or out_c % group:
        fail(f"{channels} input / {out_c} output channels of {shape_str(x)} do not split into {group} groups")
    cg, og = channels // group, out_c // group
    q = type(p)(p)
    q["num_output"] = og
    w = weights[0].reshape(group, -1)
    outs = [layer(q, [w[g]] + ([weights[1][g * og:(g + 1) * og]] if p.bias_term else []), x[g * cg:(g + 1) * cg])
            for g in range(group)]
    return np.concatenate(outs, axis=0)

"""Convolution, ConvolutionDepthWise (grouped) and Deconvolution, as im2col + BLAS."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..registry import fail, kernel, require_rank
from .activation import fused_activation

F32 = np.float32
SAME_UPPER, SAME_LOWER = -233, -234


def same_pads(size: int, extent: int, stride: int, lower: bool) -> tuple[int, int]:
    """TF/ONNX 'SAME' padding as ncnn computes it; the odd pixel goes after (before if lower)."""
    total = max(extent + (size - 1) // stride * stride - size, 0)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def conv_pads(p, x: np.ndarray) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) for a conv-like layer's pad params."""
    pads = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right)
    if any(v > 0 for v in pads):
        return tuple(max(v, 0) for v in pads)
    for code in (SAME_UPPER, SAME_LOWER):
        if all(v == code for v in pads):
            ext_h = p.dilation_h * (p.kernel_h - 1) + 1
            ext_w = p.dilation_w * (p.kernel_w - 1) + 1
            top, bottom = same_pads(x.shape[1], ext_h, p.stride_h, code == SAME_LOWER)
            left, right = same_pads(x.shape[2], ext_w, p.stride_w, code == SAME_LOWER)
            return top, bottom, left, right
    return 0, 0, 0, 0


def windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int = 1, dw: int = 1) -> np.ndarray:
    """(C, outh, outw, kh, kw) view of every kernel window of a (C, H, W) array."""
    ext_h, ext_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if x.shape[1] < ext_h or x.shape[2] < ext_w:
        fail(f"kernel extent {ext_h}x{ext_w} is larger than the padded input {x.shape[1]}x{x.shape[2]}")
    view = sliding_window_view(x, (ext_h, ext_w), axis=(1, 2))
    return view[:, ::sh, ::sw, ::dh, ::dw]


def window_slices(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int = 1, dw: int = 1):
    """For each kernel offset (i, j): the (C, outh, outw) strided slice it sees.

    Reducing these kh*kw whole-array slices is much faster than reducing a
    window view, and loops over kernel taps only, never over pixels.
    """
    ext_h, ext_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if x.shape[1] < ext_h or x.shape[2] < ext_w:
        fail(f"kernel extent {ext_h}x{ext_w} is larger than the padded input {x.shape[1]}x{x.shape[2]}")
    oh, ow = (x.shape[1] - ext_h) // sh + 1, (x.shape[2] - ext_w) // sw + 1
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[:, i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw]


def _depthwise(p, w: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """One filter per channel: accumulate kh*kw scaled slices."""
    out = None
    for i, j, tap in window_slices(xp, p.kernel_h, p.kernel_w, p.stride_h, p.stride_w,
                                   p.dilation_h, p.dilation_w):
        term = tap * w[:, i, j, None, None]
        out = term if out is None else np.add(out, term, out=out)
    return out


def _grouped_conv(p, weights, x: np.ndarray, group: int) -> np.ndarray:
    require_rank(x, 3)
    if p.int8_scale_term:
        fail("int8 convolution is not supported by the interpreter")
    if p.dynamic_weight:
        fail("dynamic_weight convolution is not supported by the interpreter")
    channels = x.shape[0]
    kh, kw, out_c = p.kernel_h, p.kernel_w, p.num_output
    if channels % group or out_c % group:
        fail(f"{channels} input / {out_c} output channels do not split into {group} groups")
    cg, og = channels // group, out_c // group
    if weights[0].size != out_c * cg * kh * kw:
        fail(f"weight has {weights[0].size} values, expected {out_c}x{cg}x{kh}x{kw} for {channels} input channels")
    top, bottom, left, right = conv_pads(p, x)
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=F32(p.pad_value))
    if cg == 1 and og == 1:
        out = _depthwise(p, weights[0].reshape(out_c, kh, kw), xp)
        if p.bias_term:
            out += weights[1].reshape(out_c, 1, 1)
        return fused_activation(out, p.activation_type, p.activation_params)
    win = windows(xp, kh, kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w)
    _, oh, ow = win.shape[:3]
    w = weights[0].reshape(group, og, cg * kh * kw)
    # im2col: (G, Cg*kh*kw, oh*ow), then one batched BLAS product
    cols = win.reshape(group, cg, oh, ow, kh, kw).transpose(0, 1, 4, 5, 2, 3).reshape(group, cg * kh * kw, oh * ow)
    out = np.matmul(w, cols).reshape(out_c, oh, ow)
    if p.bias_term:
        out += weights[1].reshape(out_c, 1, 1)
    return fused_activation(out, p.activation_type, p.activation_params)


@kernel("Convolution")
def convolution(p, weights, x):
    return _grouped_conv(p, weights, x, 1)


@kernel("ConvolutionDepthWise")
def convolution_depthwise(p, weights, x):
    return _grouped_conv(p, weights, x, p.group)


def _cut_deconv_border(p, out: np.ndarray) -> np.ndarray:
    pads = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right)
    if any(v > 0 for v in pads):
        top, bottom, left, right = (max(v, 0) for v in pads)
    elif p.output_w > 0 and p.output_h > 0:
        hcut, wcut = out.shape[1] - p.output_h, out.shape[2] - p.output_w
        if SAME_UPPER in pads:
            top, bottom, left, right = hcut // 2, hcut - hcut // 2, wcut // 2, wcut - wcut // 2
        elif SAME_LOWER in pads:
            top, bottom, left, right = hcut - hcut // 2, hcut // 2, wcut - wcut // 2, wcut // 2
        else:
            fail("output_w/output_h need pad -233 or -234; ncnn returns an empty blob otherwise")
    else:
        return out
    h, w = out.shape[1] - top - bottom, out.shape[2] - left - right
    if h <= 0 or w <= 0 or min(top, left) < 0:
        fail(f"cutting {top},{bottom},{left},{right} from a {out.shape[1]}x{out.shape[2]} output leaves nothing")
    return out[:, top:top + h, left:left + w]


@kernel("Deconvolution")
def deconvolution(p, weights, x):
    require_rank(x, 3)
    if p.int8_scale_term:
        fail("int8 deconvolution is not supported by the interpreter")
    channels, h, w = x.shape
    kh, kw, out_c = p.kernel_h, p.kernel_w, p.num_output
    if weights[0].size != out_c * channels * kh * kw:
        fail(f"weight has {weights[0].size} values, expected {out_c}x{channels}x{kh}x{kw}")
    sh, sw, dh, dw = p.stride_h, p.stride_w, p.dilation_h, p.dilation_w
    out_h = (h - 1) * sh + dh * (kh - 1) + 1 + p.output_pad_bottom
    out_w = (w - 1) * sw + dw * (kw - 1) + 1 + p.output_pad_right
    # every input pixel scatters weight * value into a kernel-sized patch: one BLAS
    # product gives all patches, then one strided add per kernel tap
    wmat = weights[0].reshape(out_c, channels, kh, kw).transpose(2, 3, 0, 1)     # kh, kw, O, C
    taps = np.matmul(wmat, x.reshape(channels, h * w)).reshape(kh, kw, out_c, h, w)
    out = np.zeros((out_c, out_h, out_w), dtype=F32)
    if p.bias_term:
        out += weights[1].reshape(out_c, 1, 1)
    for i in range(kh):
        for j in range(kw):
            out[:, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (w - 1) * sw + 1:sw] += taps[i, j]
    out = fused_activation(out, p.activation_type, p.activation_params)
    return _cut_deconv_border(p, out)

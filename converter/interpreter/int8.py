"""ncnn's int8 arithmetic (8=int8_scale_term in Convolution, ConvolutionDepthWise, InnerProduct).

The layer quantizes its float input as q = float2int8(x * bottom_scale): the product in
float32, rounded half away from zero the way ncnn's x86 code does it (add +-0.5, then
truncate, both in float32), clamped to -127..127. It sums q * w in int32 (here in float64,
exact below 2**53), then writes float32(sum) * scale_in + bias with
scale_in = 1 / (bottom_scale * weight_scale[p]) in float32 (0 where the weight scale is
0), then the fused activation. Weights: [int8 weight, bias?, weight scales, bottom scale].
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.int8_rounding import float2int8

__all__ = ["float2int8", "int8_scales", "dequantize", "conv_sums"]
F32 = np.float32


def int8_scales(p, weights, outputs: int, per: int = 1):
    """(int8 weight as float64, bias or None, scale_in per output, bottom scale) of an int8 layer."""
    bias = weights[1] if p.bias_term else None
    weight_scales = np.repeat(np.asarray(weights[-2], F32), per)
    bottom = F32(np.asarray(weights[-1]).ravel()[0])
    with np.errstate(divide="ignore", over="ignore"):   # ncnn too: a huge product gives scale 0
        scale_in = np.where(weight_scales == 0, F32(0), F32(1) / (bottom * weight_scales)).astype(F32)
    return np.asarray(weights[0]).astype(np.float64), bias, scale_in[:outputs], bottom


def dequantize(sums: np.ndarray, scale_in: np.ndarray, bias, fused: bool = False) -> np.ndarray:
    """float32(int32 sum) * scale_in + bias, per output channel along axis 0. `fused`: one
    rounding, as ncnn's x86 Convolution does it in an FMA (a float32 product is exact in float64);
    its ConvolutionDepthWise and InnerProduct round the product, then the sum (but the 3x3 depthwise
    kernels fuse too on an AVX-512 CPU: there the two differ by a rounding, tests/interpreter/test_int8.py)."""
    shape = (-1,) + (1,) * (sums.ndim - 1)
    if fused:
        out = sums.astype(F32).astype(np.float64) * scale_in.astype(np.float64).reshape(shape)
        if bias is not None:
            out += np.asarray(bias, F32).astype(np.float64).reshape(shape)
        return out.astype(F32)
    out = sums.astype(F32) * scale_in.reshape(shape)
    if bias is not None:
        out += np.asarray(bias, F32).reshape(shape)
    return out


def conv_sums(xq: np.ndarray, w: np.ndarray, group: int, geometry: tuple) -> np.ndarray:
    """Grouped int8 convolution sums of a padded quantized (C, H, W) input, exact in float64."""
    (kh, kw, sh, sw, dh, dw), (oh, ow) = geometry
    c = xq.shape[0]
    taps = [xq[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            for i in range(kh) for j in range(kw)]
    columns = np.stack(taps, axis=1).reshape(group, (c // group) * kh * kw, oh * ow)
    out_c = w.size // ((c // group) * kh * kw)
    sums = np.matmul(w.reshape(group, out_c // group, -1), columns)
    return sums.reshape(out_c, oh, ow)


def conv_step(p, weights, group: int, pads_of):
    """The step of an int8 (grouped) convolution; `pads_of(p, x)` gives (top, bottom, left, right)."""
    w, bias, scale_in, bottom = int8_scales(p, weights, p.num_output, p.num_output // group
                                            if len(weights[-2]) == group else 1)
    if len(weights[-2]) == 1 and p.num_output > 1:
        scale_in = np.full(p.num_output, scale_in[0], F32)
    kh, kw = p.kernel_h, p.kernel_w
    extent_h, extent_w = p.dilation_h * (kh - 1) + 1, p.dilation_w * (kw - 1) + 1

    def step(x):
        top, bot, left, right = pads_of(p, x)
        xq = np.pad(float2int8(x, bottom), ((0, 0), (top, bot), (left, right)))
        oh = (xq.shape[1] - extent_h) // p.stride_h + 1
        ow = (xq.shape[2] - extent_w) // p.stride_w + 1
        sums = conv_sums(xq, w, group, ((kh, kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w), (oh, ow)))
        return dequantize(sums, scale_in, bias, fused=p.group <= 1 if "group" in p else True)
    return step

"""DeformableConv2D (deformableconv2d.cpp): each kernel tap k = i * kernel_w + j samples the
image bilinearly at its window position plus the offset (row: channel 2k, column: 2k + 1),
times the mask channel k when a third blob is given; a sample with row or column not in
(-1, extent) reads 0, and corners outside the image read 0."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32


def _bilinear(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x (c, h, w) sampled at float positions (oh, ow): (c, oh, ow)."""
    c, h, w = x.shape
    inside = (rows > -1) & (cols > -1) & (rows < h) & (cols < w)
    r0, c0 = np.floor(rows).astype(np.int64), np.floor(cols).astype(np.int64)
    lr, lc = rows - r0, cols - c0
    out = np.zeros((c,) + rows.shape, F32)
    for dr, dc, weight in ((0, 0, (1 - lr) * (1 - lc)), (0, 1, (1 - lr) * lc), (1, 0, lr * (1 - lc)), (1, 1, lr * lc)):
        rr, cc = r0 + dr, c0 + dc
        valid = inside & (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
        values = x[:, np.clip(rr, 0, h - 1), np.clip(cc, 0, w - 1)]
        out += np.where(valid, weight, F32(0)).astype(F32) * values
    return out


@kernel("DeformableConv2D")
def deformable_conv2d(p, weights, x, offset, mask=None):
    if x.ndim != 3 or offset.ndim != 3:
        fail(f"DeformableConv2D input {shape_str(x)} offset {shape_str(offset)}: ncnn takes 3-D blobs")
    c, h, w = x.shape
    kh, kw = p.kernel_h, p.kernel_w
    out_h = (h + p.pad_top + p.pad_bottom - (p.dilation_h * (kh - 1) + 1)) // p.stride_h + 1
    out_w = (w + p.pad_left + p.pad_right - (p.dilation_w * (kw - 1) + 1)) // p.stride_w + 1
    if offset.shape != (2 * kh * kw, out_h, out_w):
        fail(f"DeformableConv2D offset {shape_str(offset)} for a {kh}x{kw} kernel and output {out_h}x{out_w}")
    weight = weights[0].reshape(p.num_output, c, kh, kw)
    base_r = (np.arange(out_h) * p.stride_h - p.pad_top)[:, None].astype(F32)
    base_c = (np.arange(out_w) * p.stride_w - p.pad_left)[None, :].astype(F32)
    out = np.zeros((p.num_output, out_h, out_w), F32)
    for i in range(kh):
        for j in range(kw):
            k = i * kw + j
            sampled = _bilinear(x, base_r + F32(i * p.dilation_h) + offset[2 * k],
                                base_c + F32(j * p.dilation_w) + offset[2 * k + 1])
            if mask is not None:
                sampled = sampled * mask[k]
            out += np.einsum("oc,chw->ohw", weight[:, :, i, j], sampled)
    if p.bias_term:
        out += weights[1].reshape(-1, 1, 1)
    return out

"""InstanceNorm, PixelShuffle and Reorg, as ncnn's reference layers compute them."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, require_rank

F32 = np.float32


@kernel("InstanceNorm")
def instancenorm(p, weights, x):
    """Per channel: (x - mean) * a + b with a = gamma / sqrt(var + eps), var from (x - mean)**2."""
    require_rank(x, 3, 4)
    if x.shape[0] != p.channels:
        fail(f"InstanceNorm has {p.channels} channels, the blob {x.shape[0]}")
    flat = x.reshape(x.shape[0], -1)
    mean = flat.mean(axis=1, dtype=F32, keepdims=True)
    var = np.square(flat - mean).mean(axis=1, dtype=F32, keepdims=True)
    a = F32(1) / np.sqrt(var + F32(p.eps))
    if p.affine:
        a = weights[0].reshape(-1, 1).astype(F32) * a
    b = -mean * a + (weights[1].reshape(-1, 1).astype(F32) if p.affine else F32(0))
    return (flat * a + b).reshape(x.shape).astype(F32)


@kernel("PixelShuffle")
def pixelshuffle(p, weights, x):
    """Channels to space: mode 0 takes channel p*r*r + sh*r + sw (ONNX CRD), mode 1 (sh*r + sw)*outc + p (DCR)."""
    require_rank(x, 3)
    r = p.upscale_factor
    c, h, w = x.shape
    if r < 1 or c % (r * r):
        fail(f"PixelShuffle by {r} needs channels divisible by {r * r}, got {c}")
    outc = c // (r * r)
    grid = x.reshape(outc, r, r, h, w) if p.mode == 0 else x.reshape(r, r, outc, h, w).transpose(2, 0, 1, 3, 4)
    return np.ascontiguousarray(grid.transpose(0, 3, 1, 4, 2)).reshape(outc, h * r, w * r)


@kernel("Reorg")
def reorg(p, weights, x):
    """Space to channels: output channel q*s*s + sh*s + sw (mode 0) or (sh*s + sw)*c + q (mode 1)."""
    require_rank(x, 3)
    s = p.stride
    c, h, w = x.shape
    if s < 1:
        fail(f"Reorg stride {s} must be positive")
    oh, ow = h // s, w // s
    blocks = x[:, :oh * s, :ow * s].reshape(c, oh, s, ow, s).transpose(0, 2, 4, 1, 3)   # c, sh, sw, oh, ow
    if p.mode == 1:
        blocks = blocks.transpose(1, 2, 0, 3, 4)
    return np.ascontiguousarray(blocks).reshape(c * s * s, oh, ow)

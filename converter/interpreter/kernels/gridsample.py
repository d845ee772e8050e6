"""GridSample: sample an image at grid points (gridsample.cpp and the x86 layer the pip runtime runs).

2-D: image (c, h, w), grid (outh, outw, 2) or with permute_fusion (2, outh, outw), each point
(x, y) in [-1, 1]; 3-D: image (c, d, h, w), grid (outd, outh, outw, 3) or (3, outd, outh, outw).
sample_type 1 bilinear, 2 nearest, 3 bicubic (the code's numbering; operators.md swaps 1 and 2);
padding_mode 1 zeros, 2 border, 3 reflection. All coordinate math is float32, as in ncnn.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

BILINEAR, NEAREST, BICUBIC = 1, 2, 3
ZEROS, BORDER, REFLECTION = 1, 2, 3
F32 = np.float32
ONE, HALF, TWO = F32(1), F32(0.5), F32(2)


def _unnormalize(g: np.ndarray, size: int, align: bool) -> np.ndarray:
    if align:
        return (g + ONE) / TWO * F32(size - 1)
    return ((g + ONE) * F32(size) - ONE) / TWO


def _pad_coord(c: np.ndarray, size: int, mode: int, align: bool) -> np.ndarray:
    """Where padding_mode moves a coordinate (zeros leaves it; reads outside give 0)."""
    high = F32(size - 1)
    if mode == BORDER:
        return np.clip(c, F32(0), high)
    if mode != REFLECTION:
        return c
    if align:
        c = high - np.abs(np.abs(c) - high)
        if (c < 0).any():
            # ncnn reflects once; its SIMD blocks then read zeros, its scalar tail clamps to 0
            fail("GridSample reflection with align_corner reaches past twice the image: ncnn's "
                 "x86 SIMD and scalar paths compute different values there")
        return c
    c = F32(size) - np.abs(np.abs(c + HALF) - F32(size)) - HALF
    return np.clip(c, F32(0), high)


def _gather(image: np.ndarray, taps: list[np.ndarray]) -> np.ndarray:
    """image[:, *taps] per grid point with 0 outside; taps are integer coords, outermost first."""
    inside = np.ones(taps[0].shape, bool)
    for t, size in zip(taps, image.shape[1:]):
        inside &= (t > -1) & (t < size)
    index = tuple(np.clip(t, 0, size - 1).astype(np.intp) for t, size in zip(taps, image.shape[1:]))
    return np.where(inside, image[(slice(None),) + index], F32(0))


def _cubic_coeffs(t: np.ndarray) -> list[np.ndarray]:
    a = F32(-0.75)
    t0, t1, t2 = t + ONE, t, ONE - t
    c0 = a * t0 * t0 * t0 - F32(5) * a * t0 * t0 + F32(8) * a * t0 - F32(4) * a
    c1 = (a + TWO) * t1 * t1 * t1 - (a + F32(3)) * t1 * t1 + ONE
    c2 = (a + TWO) * t2 * t2 * t2 - (a + F32(3)) * t2 * t2 + ONE
    return [c0, c1, c2, ONE - c0 - c1 - c2]


def _linear(image, coords):
    """Bilinear / trilinear: coords are float coordinates, outermost first."""
    lows = [np.floor(c) for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]

    def blend(axis: int, fixed: list) -> np.ndarray:
        if axis == len(coords):
            return _gather(image, fixed)
        lo = blend(axis + 1, fixed + [lows[axis]])
        hi = blend(axis + 1, fixed + [lows[axis] + ONE])
        return lo * (ONE - fracs[axis]) + hi * fracs[axis]
    return blend(0, [])


def _bicubic(image, raw, pad):
    """raw: unnormalized (y, x); each of the 4x4 integer taps is padded, not the sample point."""
    (ry, rx), (h, w) = raw, image.shape[1:]
    fy, fx = np.floor(ry), np.floor(rx)
    wy, wx = _cubic_coeffs(ry - fy), _cubic_coeffs(rx - fx)
    out = 0
    for i in range(4):
        ty = pad(fy + F32(i - 1), h)
        row = 0
        for j in range(4):
            row = row + _gather(image, [ty, pad(fx + F32(j - 1), w)]) * wx[j]
        out = out + row * wy[i]
    return out


def _grid_axes(p, x: np.ndarray, grid: np.ndarray) -> list[np.ndarray]:
    """The grid's per-point coordinates as arrays of the output's spatial shape, x first."""
    n = x.ndim - 1
    if grid.ndim != x.ndim or grid.shape[0 if p.permute_fusion else -1] != n:
        layout = f"({n}, ...)" if p.permute_fusion else f"(..., {n})"
        fail(f"GridSample grid {shape_str(grid)} for input {shape_str(x)}: ncnn needs a rank-{x.ndim} "
             f"grid laid out {layout}")
    return [grid[k] for k in range(n)] if p.permute_fusion else [grid[..., k] for k in range(n)]


@kernel("GridSample")
def grid_sample(p, weights, x, grid):
    if x.ndim not in (3, 4):
        fail(f"GridSample input {shape_str(x)}: ncnn samples only 3-D and 4-D blobs")
    if p.sample_type not in (BILINEAR, NEAREST, BICUBIC) or p.padding_mode not in (ZEROS, BORDER, REFLECTION):
        fail(f"GridSample sample_type {p.sample_type} / padding_mode {p.padding_mode}: ncnn refuses to load them")
    if p.sample_type == BICUBIC and x.ndim == 4:
        fail("GridSample bicubic on a 4-D blob: ncnn returns an error")
    align = bool(p.align_corner)
    sizes = x.shape[1:][::-1]                                    # w, h (, d)
    raw = [_unnormalize(g.astype(F32), s, align) for g, s in zip(_grid_axes(p, x, grid), sizes)]
    if p.sample_type == BICUBIC:
        return _bicubic(x, raw[::-1], lambda c, s: _pad_coord(c, s, p.padding_mode, align))
    coords = [_pad_coord(c, s, p.padding_mode, align) for c, s in zip(raw, sizes)][::-1]
    if p.sample_type == NEAREST:
        return _gather(x, [np.floor(c + HALF) for c in coords])
    return _linear(x, coords)

"""Convolution, ConvolutionDepthWise (grouped) and Deconvolution, as BLAS products.

Convolutions run as im2col + matmul, one band of output rows at a time: a band's
columns (4 MiB) stay in the L3 cache between the copy and the product. Smaller bands
mean more BLAS calls, and on a loaded machine each multithreaded call can wait a
scheduler tick for its second thread: 256 KiB bands made a 160x160 layer 20x slower
there (measured), 4 MiB bands are also the fastest on an idle one. Depthwise
convolution is the same product with one channel per group.

With a horizontal stride of 1 the columns are built on the padded width ("flat rows"):
kernel tap (i, j) of output row r reads padded row r*sh + i*dh from column j*dw on, so
a band's column row is one long contiguous run of the padded input instead of one
short run per output row. Numpy copies long runs several times faster; the product
then also computes the kw-1 padded columns past each output row, which the bias add
drops while writing the output (about 20% faster at 40x40, 2x for depthwise).
"""
from __future__ import annotations

import numpy as np

from .. import int8
from ..buffers import empty, recycle
from ..registry import fail, kernel, require_rank
from .activation import fused_activation, fused_activation_fn
from .dynamic_weight import dynamic_step

F32 = np.float32
SAME_UPPER, SAME_LOWER = -233, -234
BAND_FLOATS = 1 << 20          # im2col band size: 4 MiB (see the module doc)


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


def pad_hw(x: np.ndarray, top: int, bottom: int, left: int, right: int, value) -> np.ndarray:
    """A contiguous (C, H+top+bottom, W+left+right) copy of x with a constant border."""
    if not (top or bottom or left or right):
        return np.ascontiguousarray(x)
    c, h, w = x.shape
    out = empty((c, h + top + bottom, w + left + right))
    out[:, :top] = value
    out[:, top + h:] = value
    out[:, top:top + h, :left] = value
    out[:, top:top + h, left + w:] = value
    out[:, top:top + h, left:left + w] = x
    return out


def output_extent(size: int, kernel_size: int, stride: int, dilation: int = 1) -> int:
    extent = dilation * (kernel_size - 1) + 1
    if size < extent:
        fail(f"kernel extent {extent} is larger than the padded input extent {size}")
    return (size - extent) // stride + 1


def window_slices(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int = 1, dw: int = 1):
    """For each kernel offset (i, j): the (C, outh, outw) strided slice it sees.

    Reducing these kh*kw whole-array slices is much faster than reducing a
    window view, and loops over kernel taps only, never over pixels.
    """
    oh, ow = output_extent(x.shape[1], kh, sh, dh), output_extent(x.shape[2], kw, sw, dw)
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[:, i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw]


def grouped_conv(p, weights, group: int):
    """The step of a (grouped) convolution layer: im2col bands and one batched product each."""
    if p.int8_scale_term:
        activate = fused_activation_fn(p.activation_type, p.activation_params)
        int8_step = int8.conv_step(p, weights, group, conv_pads)
        return lambda x: activate(int8_step(x))
    if p.dynamic_weight:
        fail("dynamic_weight convolution is not supported by the interpreter")
    kh, kw, sh, sw, dh, dw = p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w
    out_c, taps = p.num_output, p.kernel_h * p.kernel_w
    bias = weights[1].reshape(out_c, 1, 1) if p.bias_term else None
    activate = fused_activation_fn(p.activation_type, p.activation_params)
    pad_value = F32(p.pad_value)

    geometries: dict[tuple, tuple] = {}        # input shape -> what the step needs, worked out once

    def geometry(x: np.ndarray) -> tuple:
        require_rank(x, 3)
        channels = x.shape[0]
        if channels % group or out_c % group:
            fail(f"{channels} input / {out_c} output channels do not split into {group} groups")
        cg, og = channels // group, out_c // group
        if weights[0].size != out_c * cg * taps:
            fail(f"weight has {weights[0].size} values, expected {out_c}x{cg}x{kh}x{kw} "
                 f"for {channels} input channels")
        pads = conv_pads(p, x)
        oh = output_extent(x.shape[1] + pads[0] + pads[1], kh, sh, dh)
        ow = output_extent(x.shape[2] + pads[2] + pads[3], kw, sw, dw)
        return pads, oh, ow, cg, weights[0].reshape(group, og, cg * taps)

    def step(x):
        shape = geometries.get(x.shape)
        if shape is None:
            shape = geometries[x.shape] = geometry(x)
        pads, oh, ow, cg, w = shape
        if taps == 1 and sh == sw == 1:
            out = _pointwise(w, x, pads, pad_value, out_c, oh, ow)
        elif sw == 1:
            return activate(_flat_rows_conv(w, x, pads, pad_value, bias, (group, cg, kh, kw), (sh, dh, dw), oh, ow))
        else:
            xp = pad_hw(x, *pads, pad_value)
            out = empty((out_c, oh, ow))
            s_c, s_h, s_w = xp.strides
            _banded_im2col_matmul(w, xp, out.reshape(group, out_c // group, oh * ow), (group, cg, kh, kw),
                                  oh, ow, (s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w))
            if xp is not x:
                recycle(xp)
        if bias is not None:
            out += bias
        return activate(out)
    return step


def _pointwise(w, x, pads, pad_value, out_c: int, oh: int, ow: int) -> np.ndarray:
    """A 1x1 stride-1 convolution: the (padded) input already is the column matrix."""
    group, _, cg = w.shape
    xp = pad_hw(x, *pads, pad_value)
    out = empty((out_c, oh, ow))
    np.matmul(w, xp.reshape(group, cg, oh * ow), out=out.reshape(group, out_c // group, oh * ow))
    if xp is not x:
        recycle(xp)
    return out


def padded_rows(x: np.ndarray, pads, value, tail: int) -> tuple[np.ndarray, int, int]:
    """x with its constant border in a flat buffer, followed by `tail` more border values
    (what the flat-row windows of the last channel's last row read past its end)."""
    top, bottom, left, right = pads
    c, h, w = x.shape
    hp, wp = h + top + bottom, w + left + right
    flat = empty((c * hp * wp + tail,))
    flat[c * hp * wp:] = value
    padded = flat[:c * hp * wp].reshape(c, hp, wp)
    if top or bottom or left or right:
        padded[:, :top] = value
        padded[:, top + h:] = value
        padded[:, top:top + h, :left] = value
        padded[:, top:top + h, left + w:] = value
    padded[:, top:top + h, left:left + w] = x
    return flat, hp, wp


def _bands(dims, oh: int, row: int) -> list[tuple[int, int, int, int]]:
    """(first group, end group, first output row, end row) per band of im2col columns: whole groups
    when one group's columns (`row` floats per output row and tap) fit a band (depthwise layers:
    long products, few calls), else bands of output rows across all groups."""
    group, cg, kh, kw = dims
    per_group = cg * kh * kw * oh * row
    if group > 1 and per_group <= BAND_FLOATS:
        groups = BAND_FLOATS // per_group
        return [(g0, min(g0 + groups, group), 0, oh) for g0 in range(0, group, groups)]
    rows = max(1, min(oh, BAND_FLOATS // (group * cg * kh * kw * row)))
    return [(0, group, r0, min(r0 + rows, oh)) for r0 in range(0, oh, rows)]


def _flat_rows_conv(w, x, pads, pad_value, bias, dims, steps, oh: int, ow: int) -> np.ndarray:
    """A convolution with horizontal stride 1, its columns built as flat rows (see the module
    doc); the bias add (or a copy) keeps the first ow of each computed row of wp."""
    group, kw = dims[0], dims[3]
    sh, dh, dw = steps
    flat, hp, wp = padded_rows(x, pads, pad_value, (kw - 1) * dw)
    out_c = w.shape[0] * w.shape[1]
    rows = empty((out_c, oh, wp))
    flat_out = rows.reshape(group, out_c // group, oh * wp)
    channel = hp * wp * 4
    _banded_im2col_matmul(w, flat, flat_out, dims, oh, wp, (channel, dh * wp * 4, dw * 4, sh * wp * 4, 4))
    recycle(flat)
    out = empty((out_c, oh, ow))
    if bias is None:
        np.copyto(out, rows[:, :, :ow])
    else:
        np.add(rows[:, :, :ow], bias, out=out)
    recycle(rows)
    return out


def _banded_im2col_matmul(w, source, flat_out, dims, oh: int, row: int, strides) -> None:
    """flat_out[g] = w[g] @ columns[g], building the columns one band at a time (_bands). The
    columns are read from `source` with byte `strides` (channel, tap row, tap column, output row,
    output column); an output row holds `row` columns."""
    group, cg, kh, kw = dims
    s_c, s_th, s_tw, s_row, s_col = strides
    bands = _bands(dims, oh, row)
    g_end, r_end = bands[0][1], bands[0][3]
    band = empty((g_end * (r_end - bands[0][2]) * cg * kh * kw * row,))
    for g0, g1, r0, r1 in bands:
        windows = np.ndarray((g1 - g0, cg, kh, kw, r1 - r0, row), dtype=F32, buffer=source,
                             offset=g0 * cg * s_c + r0 * s_row, strides=(cg * s_c, s_c, s_th, s_tw, s_row, s_col))
        columns = band[:windows.size].reshape(windows.shape)
        np.copyto(columns, windows)
        np.matmul(w[g0:g1], columns.reshape(g1 - g0, cg * kh * kw, (r1 - r0) * row),
                  out=flat_out[g0:g1, :, r0 * row:r1 * row])
    del windows, columns
    recycle(band)


@kernel("Convolution", prepare=True)
def convolution(p, weights):
    if p.dynamic_weight:
        return dynamic_step(p, lambda q, w: grouped_conv(q, w, 1))
    return grouped_conv(p, weights, 1)


@kernel("ConvolutionDepthWise", prepare=True)
def convolution_depthwise(p, weights):
    if p.dynamic_weight:
        return dynamic_step(p, lambda q, w: grouped_conv(q, w, q.group))
    return grouped_conv(p, weights, p.group)


def _tile_deconv_taps(p, weights, taps: np.ndarray) -> np.ndarray:
    """Deconvolution's output when the stride equals the kernel (no output pad): the patches
    tile the output without overlap, so each output pixel is one tap's value plus the bias,
    written in one pass."""
    kh, kw, out_c, h, w = taps.shape
    out = empty((out_c, h * kh, w * kw))
    tiles = out.reshape(out_c, h, kh, w, kw)
    patches = taps.transpose(2, 3, 0, 4, 1)
    if p.bias_term:
        np.add(patches, weights[1].reshape(out_c, 1, 1, 1, 1), out=tiles)
    else:
        np.copyto(tiles, patches)
    return out


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


@kernel("Deconvolution", prepare=True)
def deconvolution(p, weights):
    if p.dynamic_weight:
        return dynamic_step(p, deconvolution, transposed=True)
    if p.int8_scale_term:
        fail("int8 deconvolution is not supported by the interpreter")
    kh, kw, out_c = p.kernel_h, p.kernel_w, p.num_output
    # every input pixel scatters weight * value into a kernel-sized patch: one BLAS
    # product gives all patches, then one strided add per kernel tap
    wmats: dict[int, np.ndarray] = {}       # input channels -> (kh*kw*O, C) weight matrix

    def weight_matrix(channels: int) -> np.ndarray:
        if weights[0].size != out_c * channels * kh * kw:
            fail(f"weight has {weights[0].size} values, expected {out_c}x{channels}x{kh}x{kw}")
        w = weights[0].reshape(out_c, channels, kh, kw).transpose(2, 3, 0, 1)
        return np.ascontiguousarray(w).reshape(kh * kw * out_c, channels)

    def step(x):
        require_rank(x, 3)
        channels, h, w = x.shape
        wmat = wmats.get(channels)
        if wmat is None:
            wmat = wmats[channels] = weight_matrix(channels)
        taps = empty((kh * kw * out_c, h * w))
        np.matmul(wmat, x.reshape(channels, h * w), out=taps)
        out = place_deconv_taps(p, weights, taps.reshape(kh, kw, out_c, h, w))
        recycle(taps)
        return out
    return step


def place_deconv_taps(p, weights, taps: np.ndarray) -> np.ndarray:
    """Deconvolution's output from its per-tap products `taps` (kh, kw, out_c, h, w): one
    strided add per kernel tap onto the bias, the fused activation, then the border cut."""
    kh, kw, out_c, h, w = taps.shape
    sh, sw, dh, dw = p.stride_h, p.stride_w, p.dilation_h, p.dilation_w
    out_h = (h - 1) * sh + dh * (kh - 1) + 1 + p.output_pad_bottom
    out_w = (w - 1) * sw + dw * (kw - 1) + 1 + p.output_pad_right
    no_output_pad = p.output_pad_bottom == 0 and p.output_pad_right == 0
    if (kh, kw) == (sh, sw) and no_output_pad and (dh == 1 or kh == 1) and (dw == 1 or kw == 1):
        out = _tile_deconv_taps(p, weights, taps)
    else:
        out = np.zeros((out_c, out_h, out_w), dtype=F32)
        if p.bias_term:
            out += weights[1].reshape(out_c, 1, 1)
        for i in range(kh):
            for j in range(kw):
                out[:, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (w - 1) * sw + 1:sw] += taps[i, j]
    out = fused_activation(out, p.activation_type, p.activation_params)
    return _cut_deconv_border(p, out)

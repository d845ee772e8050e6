"""A cap on the blobs a layer may make, checked before its kernel allocates them.

Some layers size their output from params (a Padding of 2**30, an Interp scale of 1e9, a
size expression): a file the reader accepts could otherwise make the interpreter try to
allocate without bound. Each guard gives an upper bound on the float32 values a layer of
that type allocates for given input shapes; over the cap, the layer fails with one line.
The cap defaults to 2**31 bytes; set ONNX2NCNN_MAX_BLOB_BYTES (bytes) to change it.
"""
from __future__ import annotations

import math
import os

from converter.ncnn_side.expression import ExpressionError, evaluate
from converter.op_table import OpTable

from .registry import InterpreterError

DEFAULT_MAX_BLOB_BYTES = 2**31
ITEM_BYTES = 4
AUTO = -233

GUARDS = OpTable("size guard")
guard = GUARDS.register


def max_blob_bytes() -> int:
    text = os.environ.get("ONNX2NCNN_MAX_BLOB_BYTES")
    try:
        return int(text) if text else DEFAULT_MAX_BLOB_BYTES
    except ValueError:
        raise InterpreterError(f"ONNX2NCNN_MAX_BLOB_BYTES={text!r} is not a byte count") from None


def _grow(extent: int, *pads: int) -> int:
    return max(0, extent + sum(max(0, v) for v in pads))


def _chw(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(c * d, h, w) of a numpy-order blob, absent axes 1."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    return full[0] * full[1], full[2], full[3]


@guard("Padding")
def _padding(p, shapes) -> int:
    shape = list(shapes[0])
    shape[-1] = _grow(shape[-1], p.left, p.right)
    if len(shape) >= 2:
        shape[-2] = _grow(shape[-2], p.top, p.bottom)
    if len(shape) >= 3:
        shape[-3] = _grow(shape[-3], p.front, p.behind)
    return math.prod(shape)


@guard("Convolution", "ConvolutionDepthWise")
def _convolution(p, shapes) -> int:
    c, h, w = _chw(shapes[0])
    padded = c * _grow(h, p.pad_top, p.pad_bottom) * _grow(w, p.pad_left, p.pad_right)
    return max(padded, p.num_output * h * w)


@guard("Pooling")
def _pooling(p, shapes) -> int:
    c, h, w = _chw(shapes[0])
    out = c * max(p.out_h, 1) * max(p.out_w, 1) if p.adaptive_pooling else 0
    return max(out, c * _grow(h, p.pad_top, p.pad_bottom, p.kernel_h) * _grow(w, p.pad_left, p.pad_right,
                                                                             p.kernel_w))


@guard("Deconvolution")
def _deconvolution(p, shapes) -> int:
    _, h, w = _chw(shapes[0])
    out_h = max(h * max(p.stride_h, 1) + p.dilation_h * p.kernel_h + max(p.output_pad_bottom, 0), p.output_h)
    out_w = max(w * max(p.stride_w, 1) + p.dilation_w * p.kernel_w + max(p.output_pad_right, 0), p.output_w)
    return max(p.num_output, 1) * out_h * out_w


@guard("Interp")
def _interp(p, shapes) -> int:
    c, h, w = _chw(shapes[0])
    if p.size_expr:
        try:
            sizes = evaluate(p.size_expr, list(shapes))
        except ExpressionError:
            return 0                      # the kernel reports a bad expression itself
        return c * math.prod(max(v, 1) for v in sizes)
    if len(shapes) > 1:
        _, ref_h, ref_w = _chw(shapes[1])
        return c * max(ref_h, h) * max(ref_w, w)
    out_h = p.output_height or int(h * abs(p.height_scale))
    out_w = p.output_width or int(w * abs(p.width_scale))
    return c * max(out_h, 1) * max(out_w, 1)



# ---- 1-D, 3-D and spectral layers (kernels conv1d, pooling1d, conv3d, pooling3d, diag, spectrogram)

def _length(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, w) of a 1-D layer's input."""
    return (shape[0] if len(shape) >= 2 else 1), shape[-1]


@guard("Convolution1D", "ConvolutionDepthWise1D")
def _convolution1d(p, shapes) -> int:
    c, w = _length(shapes[0])
    padded = _grow(w, p.pad_left, p.pad_right)
    return max(c * padded * max(p.kernel_w, 1), max(p.num_output, 1) * padded)


@guard("Deconvolution1D")
def _deconvolution1d(p, shapes) -> int:
    _, w = _length(shapes[0])
    out_w = w * max(p.stride_w, 1) + p.dilation_w * p.kernel_w + max(p.output_pad_right, 0)
    return max(p.num_output, 1) * max(out_w, p.output_w) * max(p.kernel_w, 1)


@guard("Pooling1D")
def _pooling1d(p, shapes) -> int:
    c, w = _length(shapes[0])
    return c * max(p.out_w if p.adaptive_pooling else 0, _grow(w, p.pad_left, p.pad_right, p.kernel_w))


def _volume(shape, p, pads) -> int:
    """c times the padded d*h*w of a 4-D input, for the given (before, after) pad param names."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    return full[0] * math.prod(_grow(n, p[a], p[b]) for n, (a, b) in zip(full[1:], pads))


_PADS_3D = (("pad_front", "pad_behind"), ("pad_top", "pad_bottom"), ("pad_left", "pad_right"))


@guard("Convolution3D")
def _convolution3d(p, shapes) -> int:
    taps = max(p.kernel_d * p.kernel_h * p.kernel_w, 1)
    return _volume(shapes[0], p, _PADS_3D) * max(taps, p.num_output)


@guard("Pooling3D")
def _pooling3d(p, shapes) -> int:
    adaptive = shapes[0][0] * max(p.out_d, 1) * max(p.out_h, 1) * max(p.out_w, 1) if p.adaptive_pooling else 0
    return max(adaptive, _volume(shapes[0], p, _PADS_3D) * max(p.kernel_d * p.kernel_h * p.kernel_w, 1))


@guard("Diag")
def _diag(p, shapes) -> int:
    side = shapes[0][-1] + abs(p.diagonal)
    return side * side


@guard("Spectrogram", "InverseSpectrogram")
def _spectrogram(p, shapes) -> int:
    """The n_fft x n_fft DFT tables and the frames x n_fft products (and the overlap-added signal)."""
    n_fft, shape = max(p.n_fft, 1), shapes[0]
    hop = max(p.n_fft // 4 if p.hoplen is None else p.hoplen, 1)
    frames = shape[1] if len(shape) == 3 else (math.prod(shape) + n_fft) // hop + 1
    return n_fft * n_fft + 2 * frames * n_fft + frames * hop

def check(node, p, inputs) -> None:
    """Raise before the kernel runs if `node` would make a blob over the cap."""
    estimate = GUARDS.get(node.op)
    if estimate is None:
        return
    values = estimate(p, [tuple(x.shape) for x in inputs])
    limit = max_blob_bytes()
    if values * ITEM_BYTES > limit:
        error = InterpreterError(
            f"{node.op} layer '{node.name}' would make a blob of {values * ITEM_BYTES:,} bytes from its "
            f"params (input shapes {', '.join(str(tuple(x.shape)) for x in inputs)}), over the "
            f"{limit:,}-byte cap (set ONNX2NCNN_MAX_BLOB_BYTES to raise it)")
        error.final = True          # names the layer already
        raise error

"""ONNX STFT -> Reshape (signal to 1-D), ncnn Spectrogram (complex, no centering), Permute.

ncnn's Spectrogram builds its window itself (spectrogram.cpp): ones, a periodic Hann or a
Hamming of `winlen` taps, zero-padded to n_fft with the odd zero last. ONNX gives the window
as a tensor, so the lowering looks for the ncnn window that equals it (within 1e-6; exporters
compute the same formula in float32); any other window (Kaldi's Povey window, a Hann rounded to
float16) makes the transform a Convolution1D whose kernels are the windowed DFT basis
(lowering/dft_convolution.py). ncnn writes [freqs, frames, 2]; ONNX wants [batch, frames, freqs, 2]:
a Permute swaps the outer two.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .common import constant, fail, layer, new_tensor, optional_constant, reshape_layer
from .dft_convolution import dft_convolution
from .per_sample import per_sample
from .transpose import ORDER_TYPE

WINDOW_TOLERANCE = 1e-6
WINDOW_TYPES = {0: "ones", 1: "Hann", 2: "Hamming"}


def ncnn_window(window_type: int, n_fft: int, winlen: int) -> np.ndarray:
    """The window spectrogram.cpp generates, in float32."""
    i = np.arange(winlen, dtype=np.float64)
    angle = (2 * np.pi * i / winlen).astype(np.float32)
    if window_type == 0:
        taps = np.ones(winlen, np.float32)
    elif window_type == 1:
        taps = np.float32(0.5) * (np.float32(1) - np.cos(angle))
    else:
        taps = np.float32(0.54) - np.float32(0.46) * np.cos(angle)
    left = (n_fft - winlen) // 2
    return np.concatenate([np.zeros(left, np.float32), taps, np.zeros(n_fft - winlen - left, np.float32)])


def match_window(window: np.ndarray) -> tuple[int, int] | None:
    """(window_type, winlen) of the ncnn window equal to `window`, or None."""
    n_fft = window.size
    for window_type in WINDOW_TYPES:
        for winlen in range(n_fft, 0, -1):
            if np.max(np.abs(ncnn_window(window_type, n_fft, winlen) - window)) <= WINDOW_TOLERANCE:
                return window_type, winlen
    return None


@lowers("STFT")
def stft(graph: Graph, node: Node) -> list[Node]:
    samples = per_sample(graph, node, [0], stft)      # a batch of signals: one Spectrogram each
    if samples is not None:
        return samples
    signal, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    # onnxruntime also takes a real signal as [batch, length]
    if signal.shape is None or signal.rank not in (2, 3) or signal.shape[2:] not in ((), (1,)):
        raise fail(node, graph, f"the signal must be real, [batch, length, 1]; got {signal.shape}")
    if signal.batch_axis != 0 or out.batch_axis != 0:
        raise fail(node, graph, "the batch must be 1 (ncnn's Spectrogram takes one signal)")
    hop = int(constant(graph, node, 1, "frame_step").reshape(-1)[0])
    window = optional_constant(graph, node, 2, "window")
    length = optional_constant(graph, node, 3, "frame_length")
    n_fft = int(length.reshape(-1)[0]) if length is not None else (window.size if window is not None else None)
    if n_fft is None or n_fft < 1 or hop < 1:
        raise fail(node, graph, f"frame_length {n_fft} and frame_step {hop} must be positive")
    if window is None:
        window_type, winlen = 0, n_fft
    else:
        window = window.astype(np.float32).reshape(-1)
        if window.size != n_fft:
            raise fail(node, graph, f"its window has {window.size} taps for frames of {n_fft}")
        found = match_window(window)
        if found is None:          # Kaldi's Povey window, a float16-rounded Hann, ...: any window
            return dft_convolution(graph, node, window, hop)
        window_type, winlen = found
    flat = new_tensor(graph, f"{signal.name}_1d", (1, signal.shape[1]), 0)
    _, frames, freqs, _ = out.shape if out.shape is not None and len(out.shape) == 4 else (1, None, None, 2)
    spectrum = new_tensor(graph, f"{out.name}_by_freq", (1, freqs, frames, 2), 0)
    params = {0: n_fft, 1: 0, 2: hop, 3: winlen, 4: window_type, 5: 0, 8: int(node.attrs["onesided"])}
    swap = ORDER_TYPE[(3, (1, 0, 2))]
    return [reshape_layer(graph, node, signal.name, flat, {0: 0}, suffix="_1d"),
            layer(node, graph, "Spectrogram", [flat], [spectrum], params),
            layer(node, graph, "Permute", [spectrum], [out.name], {0: swap}, suffix="_frames_first")]

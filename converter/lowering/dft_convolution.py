"""STFT with a window ncnn's Spectrogram cannot build, as a Convolution1D over the signal.

Each frame's DFT bin f is a dot product of the frame with window[n] * cos(2 pi f n / N) (real part)
and -window[n] * sin(2 pi f n / N) (imaginary part): a convolution with 2F kernels of N taps and
stride hop, no padding (ONNX STFT frames the signal the same way). The kernels interleave real and
imaginary parts, so the [2F, frames] output reshapes to [F, 2, frames] and one Permute gives
ONNX's [frames, F, 2]. The basis is computed in float64 and stored in float32.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .common import layer, new_tensor, reshape_layer
from .transpose import ORDER_TYPE


def dft_basis(window: np.ndarray, onesided: bool) -> np.ndarray:
    """(2F, 1, N) kernels: rows 2f and 2f+1 give bin f's real and imaginary parts."""
    n_fft = window.size
    freqs = n_fft // 2 + 1 if onesided else n_fft
    angle = 2 * np.pi * np.outer(np.arange(freqs), np.arange(n_fft)) / n_fft
    basis = np.empty((freqs, 2, n_fft))
    basis[:, 0], basis[:, 1] = np.cos(angle), -np.sin(angle)
    return (basis * window.astype(np.float64)).reshape(2 * freqs, 1, n_fft).astype(np.float32)


def dft_convolution(graph: Graph, node: Node, window: np.ndarray, hop: int) -> list[Node]:
    signal, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    kernels = dft_basis(window, bool(node.attrs["onesided"]))
    channels, n_fft = kernels.shape[0], kernels.shape[2]
    frames = None if signal.shape[1] is None else (signal.shape[1] - n_fft) // hop + 1
    rows = new_tensor(graph, f"{signal.name}_rows", (1, 1, signal.shape[1]), 0)            # ncnn (1, L)
    bins = new_tensor(graph, f"{out.name}_bins", (1, channels, frames), 0)                 # (2F, frames)
    split = new_tensor(graph, f"{out.name}_parts", (1, channels // 2, 2, frames), 0)       # (F, 2, frames)
    params = {0: channels, 1: n_fft, 2: 1, 3: hop, 4: 0, 5: 0, 6: kernels.size, 15: 0}
    return [reshape_layer(graph, node, signal.name, rows, {0: 1}, suffix="_rows"),
            layer(node, graph, "Convolution1D", [rows], [bins], params, weights=[kernels], suffix="_dft"),
            reshape_layer(graph, node, bins, split, {1: 2}, suffix="_parts"),
            layer(node, graph, "Permute", [split], [out.name], {0: ORDER_TYPE[(3, (2, 0, 1))]},
                  suffix="_frames_first")]

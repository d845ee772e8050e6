"""ONNX DFT -> Reshape, one product with a constant basis, Reshape (Transposes around them for a
signal axis other than the last).

A DFT of length L is linear in the signal: bin f = sum_n x[n] e^(s 2 pi i f n / L) (s = -1, or +1
and a factor 1/L for the inverse). With the signal's N samples (real: [.., N, 1], complex:
[.., N, 2]) flattened to one row of N*c numbers and the output bins to 2F numbers (re, im
interleaved as ONNX lays them out), the transform is one MatMul by an (N*c, 2F) real matrix, which
the MatMul lowering runs as Gemm. dft_length L pads the signal with zeros (basis rows only for the
N samples there are) or cuts it (rows past L are zero). The basis is computed in float64.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .common import fail, optional_constant
from .onnx_steps import OnnxSteps


def dft_matrix(samples: int, length: int, channels: int, bins: int, inverse: bool) -> np.ndarray:
    """(samples * channels, 2 * bins): row n*c+k holds how sample n's part k (re, im) feeds each bin."""
    n = np.arange(samples)[:, None]
    angle = 2 * np.pi * (n * np.arange(bins)[None, :] % length) / length
    sign = 1.0 if inverse else -1.0
    cos, sin = np.cos(angle), sign * np.sin(angle)
    cos[length:], sin[length:] = 0, 0                                  # samples past L are cut
    matrix = np.empty((samples, channels, bins, 2))
    matrix[:, 0, :, 0], matrix[:, 0, :, 1] = cos, sin                   # re * (cos + i sin)
    if channels == 2:
        matrix[:, 1, :, 0], matrix[:, 1, :, 1] = -sin, cos              # i im * (cos + i sin)
    scale = 1.0 / length if inverse else 1.0
    return (matrix * scale).reshape(samples * channels, bins * 2).astype(np.float32)


def _axis(graph: Graph, node: Node, rank: int) -> int:
    if graph.opset >= 20:
        given = optional_constant(graph, node, 2, "axis")
        axis = -2 if given is None else int(given.reshape(-1)[0])
    else:
        axis = int(node.attrs["axis"])
    return axis + rank if axis < 0 else axis


@lowers("DFT")
def dft(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    if x.shape is None or x.rank < 3 or x.shape[-1] not in (1, 2):
        raise fail(node, graph, f"the signal must be [batch, ..., N, 1 or 2]; got {x.shape}")
    if node.attrs["onesided"] and node.attrs["inverse"]:
        raise fail(node, graph, "an inverse DFT of a one-sided spectrum (irfft: a real signal back from its "
                                "half spectrum) is not supported")
    axis = _axis(graph, node, x.rank)
    if not 1 <= axis <= x.rank - 2:
        raise fail(node, graph, f"a DFT along axis {axis}: the signal axes are 1..{x.rank - 2}")
    last = x.rank - 2
    # another signal axis is swapped with the last one around the product (FNet's 2-D FFT, axis 1 first)
    swap = list(range(x.rank))
    swap[axis], swap[last] = last, axis
    samples, channels = x.shape[axis], x.shape[-1]
    if samples is None:
        raise fail(node, graph, "the signal length along the DFT axis is known only at run time; "
                                "give it with --input-shape")
    given = optional_constant(graph, node, 1, "dft_length")
    length = samples if given is None or given.size == 0 else int(given.reshape(-1)[0])
    bins = length // 2 + 1 if node.attrs["onesided"] else length
    if length < 1:
        raise fail(node, graph, f"dft_length {length} must be positive")
    basis = dft_matrix(samples, length, channels, bins, bool(node.attrs["inverse"]))
    steps = OnnxSteps(graph, node)
    signal = x.name
    lead = tuple(x.shape[a] for a in swap[:-2])
    if axis != last:
        signal = steps.add("Transpose", [signal], lead + (samples, channels), {"perm": swap})
    keep = [0] * len(lead)                        # Reshape's 0 copies an axis, known or not
    rows = steps.add("Reshape", [signal], lead + (samples * channels,), {},
                     const=np.array(keep + [samples * channels], np.int64))
    product = steps.add("MatMul", [rows], lead + (bins * 2,), {}, const=basis)
    moved = lead + (bins, 2)
    result = steps.add("Reshape", [product], moved, {}, const=np.array(keep + [bins, 2], np.int64))
    if axis != last:
        steps.add("Transpose", [result], tuple(moved[p] for p in swap), {"perm": swap})
    return steps.lower()

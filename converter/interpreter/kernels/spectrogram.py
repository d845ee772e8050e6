"""Spectrogram (STFT) and InverseSpectrogram (inverse STFT, overlap-add): spectrogram.cpp and
inversespectrogram.cpp, as plain DFT products with ncnn's float32 cos/sin tables.

Layouts: Spectrogram maps a 1-D signal to (freqs, frames) (power 1 or 2) or (freqs, frames, 2)
(power 0: real and imaginary parts); InverseSpectrogram maps (freqs, frames, 2) back to a
1-D signal (returns 1: real part, 2: imaginary part) or (samples, 2) (returns 0).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32
ONES, HANN, HAMMING = 0, 1, 2
PAD_MODES = {0: "constant", 1: "edge", 2: "reflect"}


def hop(p) -> int:
    return p.n_fft // 4 if p.hoplen is None else p.hoplen


def window(p) -> np.ndarray:
    """The n_fft-long window: winlen taps of ones/hann/hamming centred in zeros."""
    if not 0 < p.winlen <= p.n_fft or p.window_type not in (ONES, HANN, HAMMING):
        fail(f"window_type {p.window_type} of length {p.winlen} for n_fft {p.n_fft}: ncnn leaves the window "
             f"uninitialized")
    phase = np.cos((2 * np.pi * np.arange(p.winlen) / p.winlen).astype(F32).astype(np.float64)).astype(F32)
    taps = {ONES: np.ones(p.winlen, F32), HANN: F32(0.5) * (F32(1) - phase),
            HAMMING: F32(0.54) - F32(0.46) * phase}[p.window_type]
    before = (p.n_fft - p.winlen) // 2
    return np.concatenate([np.zeros(before, F32), taps, np.zeros(p.n_fft - p.winlen - before, F32)])


def dft_tables(n_fft: int, freqs: int) -> tuple[np.ndarray, np.ndarray]:
    """cosf/sinf of the double angle 2*pi*i*k/n_fft rounded to float, as ncnn evaluates them: (freqs, n_fft)."""
    angle = (2 * np.pi * np.outer(np.arange(freqs), np.arange(n_fft)) / n_fft).astype(F32).astype(np.float64)
    return np.cos(angle).astype(F32), np.sin(angle).astype(F32)


def _check_n_fft(p) -> None:
    if p.n_fft < 1 or hop(p) < 1:
        fail(f"n_fft {p.n_fft} with hop length {hop(p)}: ncnn needs both positive")


@kernel("Spectrogram")
def spectrogram(p, weights, x):
    _check_n_fft(p)
    if x.ndim != 1:
        fail(f"Spectrogram input has shape {shape_str(x)}; ncnn reads a 1-D signal only")
    taper = window(p)
    if p.center:
        if p.pad_type not in PAD_MODES or (p.pad_type == 2 and x.size <= p.n_fft // 2):
            fail(f"pad_type {p.pad_type} cannot pad {x.size} samples by {p.n_fft // 2} (ncnn reads outside the signal)")
        x = np.pad(x, p.n_fft // 2, mode=PAD_MODES[p.pad_type])
    frames = (x.size - p.n_fft) // hop(p) + 1
    if frames < 1:
        fail(f"a {x.size}-sample signal holds no {p.n_fft}-sample frame")
    framed = np.lib.stride_tricks.as_strided(x, (frames, p.n_fft), (x.strides[0] * hop(p), x.strides[0])) * taper
    cos, sin = dft_tables(p.n_fft, p.n_fft // 2 + 1)
    re, im = cos @ framed.T, -(sin @ framed.T)            # (freqs, frames)
    if p.normalized:
        norm = F32(1 / np.sqrt(p.n_fft)) if p.normalized == 1 else F32(1 / np.sqrt(np.sum(taper * taper, dtype=F32)))
        re, im = re * norm, im * norm
    if not p.onesided:                                     # the other half mirrors, conjugated
        mirror = slice(p.n_fft - p.n_fft // 2 - 1, 0, -1)
        re, im = np.concatenate([re, re[mirror]]), np.concatenate([im, -im[mirror]])
    if p.power == 0:
        return np.stack([re, im], axis=-1)
    squares = re * re + im * im
    return np.sqrt(squares) if p.power == 1 else squares


@kernel("InverseSpectrogram")
def inverse_spectrogram(p, weights, x):
    _check_n_fft(p)
    half = p.n_fft // 2 + 1
    if x.ndim != 3 or x.shape[2] != 2 or x.shape[0] not in (half, p.n_fft):
        fail(f"InverseSpectrogram input {shape_str(x)} is not (freqs, frames, 2) with {half} or {p.n_fft} freqs")
    taper, n, step = window(p), p.n_fft, hop(p)
    re, im = x[..., 0].T, x[..., 1].T                      # (frames, freqs)
    if x.shape[0] == half:                                 # onesided: rebuild the conjugate half
        mirror = slice(n - half, 0, -1)
        re, im = np.concatenate([re, re[:, mirror]], axis=1), np.concatenate([im, -im[:, mirror]], axis=1)
    if p.normalized:
        norm = F32(np.sqrt(n)) if p.normalized == 1 else F32(np.sqrt(np.sum(taper * taper, dtype=F32)))
        re, im = re * norm, im * norm
    cos, sin = dft_tables(n, n)                            # symmetric: (i, k) == (k, i)
    out_re = (re @ cos - im @ sin) / F32(n) * taper        # (frames, n_fft)
    out_im = (re @ sin + im @ cos) / F32(n) * taper
    frames = x.shape[1]
    size = (frames - 1) * step + (n % 2 if p.center else n)
    index = (np.arange(frames)[:, None] * step + np.arange(n)[None, :] - (n // 2 if p.center else 0)).ravel()
    keep = (index >= 0) & (index < size)
    index = index[keep]

    def overlap_add(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, values.ravel()[keep], minlength=size).astype(F32)

    energy = overlap_add(np.broadcast_to(taper * taper, (frames, n)))
    energy[energy == 0] = 1                               # ncnn leaves those samples undivided
    parts = [overlap_add(out_re) / energy, overlap_add(out_im) / energy]
    if p.returns == 0:
        return np.stack(parts, axis=-1)
    if p.returns in (1, 2):
        return parts[p.returns - 1]
    fail(f"InverseSpectrogram returns {p.returns}: ncnn writes only zeros for it")

"""Spectrogram and InverseSpectrogram against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

STFT = [
    dict(n_fft=16),
    dict(n_fft=16, hoplen=5, window_type=1),
    dict(n_fft=15, hoplen=4, window_type=2),
    dict(n_fft=16, winlen=10, window_type=1),
    dict(n_fft=17, winlen=12, hoplen=3, window_type=2),
    dict(n_fft=16, center=0, window_type=1),
    dict(n_fft=16, pad_type=0),
    dict(n_fft=16, pad_type=1, hoplen=6),
    dict(n_fft=16, normalized=1, window_type=1),
    dict(n_fft=16, normalized=2, window_type=2, winlen=12),
    dict(n_fft=16, onesided=0, window_type=1),
    dict(n_fft=15, onesided=0, hoplen=2),
    dict(n_fft=64, hoplen=16, window_type=1),
]
label = lambda g: ",".join(f"{k}={v}" for k, v in g.items())  # noqa: E731


@pytest.mark.parametrize("stft", STFT, ids=label)
@pytest.mark.parametrize("power", [0, 1, 2])
def test_spectrogram(tmp_path, rng, stft, power):
    check(tmp_path, "Spectrogram", ids("Spectrogram", power=power, **stft), [rng.standard_normal(100)])


def test_spectrogram_hop_defaults_to_a_quarter_of_n_fft(tmp_path, rng):
    out = check(tmp_path, "Spectrogram", ids("Spectrogram", n_fft=20, power=2), [rng.standard_normal(60)])
    assert out["out0"].shape == (11, 60 // 5 + 1)


@pytest.mark.parametrize("params,signal,match", [
    (dict(n_fft=16, pad_type=2), 8, "cannot pad 8 samples"),
    (dict(n_fft=16, center=0), 10, "holds no 16-sample frame"),
    (dict(n_fft=16, winlen=20), 40, "uninitialized"),
])
def test_spectrogram_refusals(params, signal, match):
    with pytest.raises(InterpreterError, match=match):
        interpret("Spectrogram", ids("Spectrogram", **params), [np.zeros(signal)])


ISTFT = [
    dict(n_fft=16),
    dict(n_fft=16, hoplen=4, window_type=1),
    dict(n_fft=15, hoplen=5, window_type=2),
    dict(n_fft=16, winlen=10, window_type=1),
    dict(n_fft=16, center=0, window_type=1),
    dict(n_fft=15, center=0, hoplen=3),
    dict(n_fft=16, normalized=1, window_type=1),
    dict(n_fft=16, normalized=2, window_type=2),
]


@pytest.mark.parametrize("istft", ISTFT, ids=label)
@pytest.mark.parametrize("returns", [0, 1, 2])
@pytest.mark.parametrize("onesided", [1, 0])
def test_inverse_spectrogram(tmp_path, rng, istft, returns, onesided):
    freqs = istft["n_fft"] // 2 + 1 if onesided else istft["n_fft"]
    x = rng.standard_normal((freqs, 9, 2))
    check(tmp_path, "InverseSpectrogram", ids("InverseSpectrogram", returns=returns, **istft), [x])


def test_inverse_spectrogram_returns_complex_by_default(tmp_path, rng):
    """inversespectrogram.cpp reads param 1 with default 0 (operators.md says 1)."""
    out = check(tmp_path, "InverseSpectrogram", {0: 16, 2: 4}, [rng.standard_normal((9, 6, 2))])
    assert out["out0"].shape == (5 * 4, 2)


def test_stft_then_istft_gives_the_signal_back(tmp_path, rng):
    """ncnn's own round trip: Spectrogram (power 0) then InverseSpectrogram (returns 1)."""
    signal = rng.standard_normal(96).astype(np.float32)
    stft = interpret("Spectrogram", ids("Spectrogram", n_fft=16, hoplen=4, window_type=1), [signal])["out0"]
    back = check(tmp_path, "InverseSpectrogram", ids("InverseSpectrogram", n_fft=16, hoplen=4, window_type=1,
                                                     returns=1), [stft])["out0"]
    np.testing.assert_allclose(back, signal[:back.size], atol=1e-4)

"""ONNX STFT as ncnn Spectrogram (+ Reshape, Permute), in real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from converter.lowering.stft import ncnn_window
from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model

I64 = lambda v: np.array(v, np.int64)  # noqa: E731


def hann(n: int) -> np.ndarray:
    """torch.hann_window(n) (periodic), as exporters store it."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).astype(np.float32)


def stft_model(signal_shape, step, window=None, frame_length=None, onesided=None):
    inputs = ["x", "step", "window" if window is not None else "", "length" if frame_length else ""]
    while inputs[-1] == "":
        inputs.pop()
    attrs = {} if onesided is None else {"onesided": onesided}
    inits = [("step", I64(step))] + ([("window", window)] if window is not None else []) + \
        ([("length", I64(frame_length))] if frame_length else [])
    return make_model([helper.make_node("STFT", inputs, ["y"], **attrs)], [("x", signal_shape)], [("y", None)],
                      inits, opset=17)


def padded(taps: np.ndarray, n_fft: int) -> np.ndarray:
    left = (n_fft - taps.size) // 2
    return np.concatenate([np.zeros(left, np.float32), taps, np.zeros(n_fft - taps.size - left, np.float32)])


CASES = {
    "hann": ([1, 200], 16, hann(64), None, None),
    "hann_signal_with_channel": ([1, 200, 1], 16, hann(64), None, None),
    "hann_padded_to_n_fft": ([1, 300], 20, padded(hann(50), 64), None, None),
    "hamming": ([1, 150], 10, ncnn_window(2, 32, 32), None, None),
    "no_window": ([1, 120], 8, None, 32, None),
    "two_sided": ([1, 100], 12, hann(32), None, 0),
    "explicit_onesided": ([1, 100], 12, hann(32), None, 1),
}


@pytest.mark.parametrize("case", CASES)
def test_stft(tmp_path, case):
    shape, step, window, length, onesided = CASES[case]
    model = stft_model(shape, step, window, length, onesided)
    converted = check_in_ncnn(model, tmp_path, low=-1, high=1, rtol=1e-4, atol=1e-4)
    assert "Spectrogram" in [n.op for n in converted.graph.nodes.values()]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_one_file_for_every_signal_length(tmp_path):
    model = stft_model([1, "N"], 16, hann(64))
    converted = convert(model)
    for n in (200, 333):
        check_in_ncnn(model, tmp_path, dims={"N": n}, low=-1, high=1, rtol=1e-4, atol=1e-4)
    assert converted.io()["outputs"][0]["ncnn_shape"][1:] == [33, 2]


ANY_WINDOW = {
    "povey": ([1, 200], 16, (hann(64) ** 0.85).astype(np.float32), 1),     # Kaldi's: Hann to the power 0.85
    "float16_hann": ([1, 190], 10, hann(40).astype(np.float16).astype(np.float32), 1),
    "povey_two_sided": ([1, 150, 1], 12, (hann(32) ** 0.85).astype(np.float32), 0),
}


@pytest.mark.parametrize("case", ANY_WINDOW)
def test_window_ncnn_cannot_build_is_a_dft_convolution(tmp_path, case):
    """Windows Spectrogram cannot build: a Convolution1D over the windowed DFT basis."""
    shape, step, window, onesided = ANY_WINDOW[case]
    model = stft_model(shape, step, window, None, onesided)
    converted = check_in_ncnn(model, tmp_path, low=-1, high=1, rtol=1e-4, atol=1e-4)
    types = [n.op for n in converted.graph.nodes.values()]
    assert "Convolution1D" in types and "Spectrogram" not in types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_dft_convolution_one_file_for_every_signal_length(tmp_path):
    model = stft_model([1, "N"], 16, (hann(64) ** 0.85).astype(np.float32))
    assert_one_file_many_sizes(model, tmp_path, [(200,), (333,)], dims=("N",), rtol=1e-4, atol=1e-4)

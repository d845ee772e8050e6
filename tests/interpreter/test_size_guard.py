"""A layer whose params ask for a huge blob fails with one line before allocating it."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import ids, interpret

X = np.zeros((2, 4, 4), np.float32)
HUGE = [
    ("Padding", ids("Padding", top=2**20, bottom=2**20, left=2**20, right=2**20)),
    ("Interp", ids("Interp", resize_type=1, height_scale=1e5, width_scale=1e5)),
    ("Interp", ids("Interp", resize_type=2, output_height=100000, output_width=100000)),
    ("Interp", ids("Interp", resize_type=1, size_expr="*(0w,100000),*(0h,100000)")),
    ("Pooling", ids("Pooling", kernel_w=2, pad_left=2**20)),
    ("Pooling1D", ids("Pooling1D", kernel_w=2, pad_left=2**30)),
    ("Pooling1D", ids("Pooling1D", adaptive_pooling=1, out_w=2**30)),
    ("Pooling3D", ids("Pooling3D", kernel_w=2, pad_left=2**10)),
    ("Pooling3D", ids("Pooling3D", adaptive_pooling=1, out_w=2**11)),
    ("Diag", ids("Diag", diagonal=2**16)),
    ("Spectrogram", ids("Spectrogram", n_fft=2**16)),
    ("InverseSpectrogram", ids("InverseSpectrogram", n_fft=2**16)),
]


@pytest.mark.parametrize("op, params", HUGE, ids=[f"{op}-{i}" for i, (op, _) in enumerate(HUGE)])
def test_huge_outputs_are_refused_before_allocating(op, params):
    with pytest.raises(InterpreterError, match="over the 2,147,483,648-byte cap") as info:
        interpret(op, params, [X])
    message = str(info.value)
    assert "\n" not in message and "ONNX2NCNN_MAX_BLOB_BYTES" in message
    assert message.startswith(f"{op} layer 'layer' would make a blob of")


def test_huge_convolution_padding_is_refused():
    params = ids("Convolution", num_output=1, kernel_w=1, weight_data_size=2, pad_left=2**20)
    with pytest.raises(InterpreterError, match="cap"):
        interpret("Convolution", params, [X], weights=[np.ones(2, np.float32)])


@pytest.mark.parametrize("op,shape,params", [
    ("Convolution1D", (2, 8), dict(num_output=1, kernel_w=1, weight_data_size=2, pad_left=2**30)),
    ("ConvolutionDepthWise1D", (2, 8), dict(num_output=2, kernel_w=1, weight_data_size=2, group=2, pad_left=2**30)),
    ("Deconvolution1D", (2, 8), dict(num_output=1, kernel_w=1, weight_data_size=2, stride_w=2**28)),
    ("Convolution3D", (2, 4, 4, 4), dict(num_output=1, kernel_w=1, weight_data_size=2, pad_left=2**10)),
])
def test_huge_1d_and_3d_convolutions_are_refused(op, shape, params):
    with pytest.raises(InterpreterError, match="cap"):
        interpret(op, ids(op, **params), [np.zeros(shape, np.float32)], weights=[np.ones(2, np.float32)])


def test_the_cap_is_settable(monkeypatch):
    params = ids("Padding", top=8, bottom=8, left=8, right=8)
    assert interpret("Padding", params, [X])["out0"].shape == (2, 20, 20)
    monkeypatch.setenv("ONNX2NCNN_MAX_BLOB_BYTES", "1000")
    with pytest.raises(InterpreterError, match="3,200 bytes .* over the 1,000-byte cap"):
        interpret("Padding", params, [X])

"""ONNX DFT as one product with a constant basis (Reshape, Gemm, Reshape), in real ncnn and the
interpreter against onnxruntime: real and complex signals, one- and two-sided, inverse, padded
and cut dft_length, along the last signal axis or another (swapped to it), opset 17 (axis attribute) and 20 (axis input)."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def dft_model(shape, opset=17, axis=None, length=None, **attrs):
    inputs, inits = ["x"], []
    if length is not None or (opset >= 20 and axis is not None):
        inputs.append("length" if length is not None else "")
        if length is not None:
            inits.append(("length", np.array(length, np.int64)))
    if opset >= 20 and axis is not None:
        inputs.append("axis")
        inits.append(("axis", np.array(axis, np.int64)))
    elif axis is not None:
        attrs["axis"] = axis
    return make_model([helper.make_node("DFT", inputs, ["y"], **attrs)], [("x", shape)], [("y", None)], inits,
                      opset=opset)


CASES = {
    "real_onesided": dict(shape=[1, 6, 32, 1], axis=2, onesided=1),
    "real_two_sided": dict(shape=[1, 32, 1], axis=1),
    "complex": dict(shape=[1, 5, 24, 2], axis=2),
    "complex_inverse": dict(shape=[1, 24, 2], axis=1, inverse=1),
    "padded": dict(shape=[1, 4, 20, 1], axis=2, length=32, onesided=1),
    "cut": dict(shape=[1, 4, 20, 2], axis=2, length=12),
    "opset20_default_axis": dict(shape=[1, 3, 16, 1], opset=20, onesided=1),
    "opset20_axis_input": dict(shape=[1, 16, 2], opset=20, axis=-2, inverse=1),
    "outer_axis": dict(shape=[1, 16, 8, 1], axis=1),                    # swapped to the last signal axis
    "outer_axis_complex": dict(shape=[1, 6, 8, 2], axis=1, inverse=1),    # FNet's 2-D FFT, its second step
    "outer_axis_onesided": dict(shape=[1, 12, 8, 1], axis=1, onesided=1),
}


@pytest.mark.parametrize("case", CASES)
def test_dft(tmp_path, case):
    model = dft_model(**CASES[case])
    converted = check_in_ncnn(model, tmp_path, low=-1, high=1, rtol=1e-4, atol=1e-4)
    assert {"Gemm", "InnerProduct"} & {n.op for n in converted.graph.topological()}
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_dft_along_the_batch_axis_is_refused():
    with pytest.raises(ConversionError, match="DFT node .*the signal axes are 1..2"):
        convert(dft_model([1, 16, 8, 1], axis=0))


@pytest.mark.parametrize("axis", [1, 2])
def test_inverse_of_a_one_sided_spectrum_is_refused(axis):
    """irfft (onnx's test_dft_irfft): a real signal of 2 (N - 1) samples from N bins; the product above
    would give N // 2 + 1 complex bins of the wrong signal instead."""
    with pytest.raises(ConversionError, match="DFT node .*irfft"):
        convert(dft_model([1, 6, 10, 2], opset=20, axis=axis, inverse=1, onesided=1))

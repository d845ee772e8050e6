"""LRN and PRelu in real ncnn against onnxruntime; their kernels against real ncnn."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


@pytest.mark.parametrize("size, alpha, beta, bias", [(5, 1e-4, 0.75, 1.0), (3, 0.5, 0.6, 2.0), (1, 0.1, 0.5, 1.0)])
def test_lrn(tmp_path, size, alpha, beta, bias):
    model = make_model([helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)],
                       [("x", [1, 7, 4, 5])], [("y", [1, 7, 4, 5])])
    converted = check_in_ncnn(model, tmp_path, low=-3, high=3)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_lrn_even_size_is_refused():
    model = make_model([helper.make_node("LRN", ["x"], ["y"], size=4)], [("x", [1, 7, 4, 5])], [("y", [1, 7, 4, 5])])
    with pytest.raises(ConversionError, match="even"):
        convert(model)


@pytest.mark.parametrize("x_shape, slope_shape", [
    ([1, 4, 5, 6], [4, 1, 1]), ([1, 4, 5, 6], [1]), ([1, 4, 5, 6], [1, 4, 1, 1]), ([1, 6, 9], [6, 1]),
    ([1, 8], [8]),
])
def test_prelu(tmp_path, x_shape, slope_shape):
    slope = np.random.default_rng(1).uniform(-0.5, 0.5, slope_shape).astype(np.float32)
    model = make_model([helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", x_shape)], [("y", x_shape)],
                       [("s", slope)])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_prelu_per_width_slope_is_refused():
    model = make_model([helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", [1, 4, 5, 6])], [("y", [1, 4, 5, 6])],
                       [("s", np.ones(6, np.float32))])
    with pytest.raises(ConversionError, match="one per channel"):
        convert(model)

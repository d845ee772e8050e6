"""Pow by a constant: exponents with a UnaryOp form avoid ncnn's SIMD pow, which is garbage for bases <= 0."""
import numpy as np
import pytest
from onnx import helper

from converter.interpreter import InterpreterError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

from interpreter.layer_check import interpret, one_layer_graph, run_real

SHAPE = [1, 3, 4, 5]


def pow_model(exponent):
    return make_model([helper.make_node("Pow", ["x", "e"], ["y"])], [("x", SHAPE)], [("y", SHAPE)],
                      [("e", np.array(exponent, np.float32))])


@pytest.mark.parametrize("exponent, low, high", [
    (2.0, -3, 3), (3.0, -3, 3), (4.0, -2, 2), (1.0, -3, 3),      # negative bases and zeros are fine
    (-1.0, 0.5, 3), (-2.0, 0.5, 3), (0.5, 0, 3), (-0.5, 0.5, 3),
])
def test_exponents_with_a_unary_form(tmp_path, exponent, low, high):
    model = pow_model(exponent)
    feeds = {"x": np.random.default_rng(0).uniform(low, high, SHAPE).astype(np.float32)}
    feeds["x"].flat[:3] = [low, 0.0 if low <= 0 else low, high]
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    assert "BinaryOp" not in ncnn_layer_types(converted) or exponent == 3.0
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_other_exponents_keep_binaryop_pow(tmp_path):
    model = pow_model(1.7)
    converted = check_in_ncnn(model, tmp_path, low=0.1, high=3)
    assert ncnn_layer_types(converted) == ["Input", "BinaryOp"]


def test_pow_with_a_base_at_most_zero_is_refused_by_the_interpreter(tmp_path):
    """The real ncnn returns garbage (2.4e38 on x86) in its SIMD lanes for bases <= 0, even 0**2."""
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 2.0, 3.0, 1.5, 4.0]], np.float32)
    graph, feeds = one_layer_graph("BinaryOp", {0: 6, 1: 1, 2: 2.0}, [x])
    real = run_real(tmp_path, graph, feeds)["out0"]
    assert not np.allclose(real[0, :3], x[0, :3] ** 2)
    np.testing.assert_allclose(real[0, 3:], x[0, 3:] ** 2, rtol=1e-6)
    with pytest.raises(InterpreterError, match="base <= 0"):
        interpret("BinaryOp", {0: 6, 1: 1, 2: 2.0}, [x])

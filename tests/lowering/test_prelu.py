"""PRelu -> ncnn PReLU (one slope, or one per channel) or the BinaryOp form, real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def prelu_model(x_shape, slope, slope_input=False):
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    if slope_input:
        return make_model([node], [("x", x_shape), ("slope", slope.shape)], [("y", None)])
    return make_model([node], [("x", x_shape)], [("y", None)], [("slope", slope)])


def slopes(*shape):
    return np.random.default_rng(5).uniform(-1, 1, shape).astype(np.float32)


CASES = {
    "single": ((1, 4, 5, 6), slopes(1), "PReLU"),
    "scalar": ((1, 4, 5, 6), slopes(), "PReLU"),
    "per_channel": ((1, 4, 5, 6), slopes(4, 1, 1), "PReLU"),
    "per_channel_4d": ((1, 4, 5, 6), slopes(1, 4, 1, 1), "PReLU"),
    "per_channel_1d": ((1, 4, 7), slopes(4, 1), "PReLU"),
    "per_feature_2d": ((1, 6), slopes(6), "PReLU"),
    "per_width": ((1, 4, 5, 6), slopes(6), "BinaryOp"),
    "per_height_width": ((1, 4, 5, 6), slopes(5, 6), "BinaryOp"),
    "full": ((1, 3, 4, 5), slopes(3, 4, 5), "BinaryOp"),
    "channel_equals_width": ((1, 4, 3, 4), slopes(4), "BinaryOp"),
}


@pytest.mark.parametrize("name", CASES)
def test_prelu_in_real_ncnn(tmp_path, name):
    x_shape, slope, layer_type = CASES[name]
    model = prelu_model(x_shape, slope)
    converted = check_in_ncnn(model, tmp_path)
    types = ncnn_layer_types(converted)
    assert layer_type in types and (layer_type == "BinaryOp") != ("PReLU" in types)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_prelu_with_run_time_slope(tmp_path):
    model = prelu_model((1, 3, 4, 5), slopes(3, 1, 1), slope_input=True)
    converted = check_in_ncnn(model, tmp_path)
    assert "PReLU" not in ncnn_layer_types(converted)

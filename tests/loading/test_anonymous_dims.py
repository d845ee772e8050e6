"""Dims named "?" (Paddle), "unk__N", "-1" or "" name no size: each is its own unknown, and a
user's --input-shape wins over the model's dim names (a warning at most)."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from onnx_cases import check_in_ncnn, make_model

SCALE = ("s", np.array([0.5, 2.0, -1.0], np.float32).reshape(1, 3, 1, 1))


@pytest.mark.parametrize("anonymous", ["?", "unk__7", "-1", ""])
def test_anonymous_dims_take_different_sizes(tmp_path, anonymous):
    model = make_model([helper.make_node("Mul", ["x", "s"], ["y"])], [("x", [anonymous, 3, anonymous, anonymous])],
                       [("y", None)], [SCALE])
    converted = check_in_ncnn(model, tmp_path, feeds={"x": np.linspace(-1, 1, 3 * 4 * 6, dtype=np.float32)
                                                      .reshape(1, 3, 4, 6)}, input_shapes={"x": [1, 3, 4, 6]})
    assert converted.io()["outputs"][0]["ncnn_shape"] == [3, 4, 6]
    assert not converted.stats["warnings"]


def test_anonymous_dims_stay_apart_without_input_shape():
    model = make_model([helper.make_node("Mul", ["x", "s"], ["y"])], [("x", ["?", 3, "?", "?"])],
                       [("y", None)], [SCALE])
    assert convert(model).io()["inputs"][0]["onnx_shape"] == [1, 3, None, None]


def test_given_sizes_win_over_a_shared_dim_name():
    """x and z both say N; the user gives two sizes: both are used, with a warning, and w (not
    given) keeps its N unknown rather than guessing which size it shares."""
    model = make_model([helper.make_node("Add", ["x", "z"], ["y"]), helper.make_node("Relu", ["w"], ["v"])],
                       [("x", ["N", 3]), ("z", ["N", 3]), ("w", [2, "N"])], [("y", None), ("v", None)])
    converted = convert(model, input_shapes={"x": [1, 3], "z": [2, 3]})
    shapes = {e["onnx"]: e["onnx_shape"] for e in converted.io()["inputs"]}
    assert shapes == {"x": [1, 3], "z": [2, 3], "w": [2, None]}
    assert any("dim 'N' is 1 in x but 2 in z" in w for w in converted.stats["warnings"])

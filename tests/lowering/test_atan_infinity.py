"""Atan at +-inf: ncnn's UnaryOp atan gives NaN there (measured), the lowering clamps to +-FLT_MAX
first; real ncnn and the interpreter against onnxruntime."""
import numpy as np
from onnx import helper

from onnx_cases import assert_matches_reference, check_in_ncnn, make_model


def test_atan_of_infinity(tmp_path):
    """ncnn's atan is NaN at +-inf; the lowering clamps to +-FLT_MAX first."""
    model = make_model([helper.make_node("Atan", ["x"], ["y"])], [("x", [6])], [("y", None)])
    feeds = {"x": np.array([np.inf, -np.inf, 3e38, -1.5, 0, 7], np.float32)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=1e-6, atol=1e-6)
    assert_matches_reference(model, feeds, converted.run(feeds), rtol=1e-6, atol=1e-6)

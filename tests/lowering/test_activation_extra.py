"""Softplus, Mish, Celu, Shrink (ncnn layers) and LogSoftmax, Softsign (decomposed), against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

SHAPE = [1, 3, 4, 6]


@pytest.mark.parametrize("op, attrs, layer", [
    ("Softplus", {}, "Softplus"), ("Mish", {}, "Mish"), ("Celu", {"alpha": 0.7}, "CELU"),
    ("Shrink", {"bias": 0.3, "lambd": 0.8}, "Shrink"), ("Shrink", {}, "Shrink"),
    ("Softsign", {}, "BinaryOp"),
])
def test_activation(tmp_path, op, attrs, layer):
    model = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", SHAPE)], [("y", SHAPE)], opset=18)
    converted = check_in_ncnn(model, tmp_path, low=-25, high=25)
    assert layer in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("shape, axis", [(SHAPE, -1), (SHAPE, 1), ([1, 7, 30], 2), ([1, 30], 1)])
def test_log_softmax_is_exact_where_softmax_underflows(tmp_path, shape, axis):
    """Logits 200 apart: log(softmax) would be -inf; the decomposition gives onnxruntime's -200."""
    model = make_model([helper.make_node("LogSoftmax", ["x"], ["y"], axis=axis)], [("x", shape)], [("y", shape)])
    converted = check_in_ncnn(model, tmp_path, low=-100, high=100)
    assert "Softmax" not in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)

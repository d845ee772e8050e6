"""Softplus, Softsign, Mish, Celu, Shrink in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, random_inputs

CASES = {
    "Softplus": ({}, 13, "BinaryOp"),
    "Softsign": ({}, 13, "BinaryOp"),
    "Mish": ({}, 18, "Mish"),
    "Celu": ({"alpha": 0.7}, 13, "CELU"),
    "Celu_default": ({}, 13, "CELU"),
    "Shrink": ({"bias": 0.2, "lambd": 0.8}, 13, "Shrink"),
    "Shrink_default": ({}, 13, "Shrink"),
}
SHAPES = [(1, 3, 4, 5), (1, 6, 7), (1, 9)]


def one_node(op, x_shape, opset, **attrs):
    return make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x_shape)], [("y", None)],
                      opset=opset)


@pytest.mark.parametrize("x_shape", SHAPES, ids=["4d", "3d", "2d"])
@pytest.mark.parametrize("case", CASES)
def test_activation(case, x_shape, tmp_path):
    attrs, opset, layer_type = CASES[case]
    model = one_node(case.split("_")[0], x_shape, opset, **attrs)
    converted = check_in_ncnn(model, tmp_path, random_inputs(model, low=-6, high=6))
    assert layer_type in [n.op for n in converted.graph.nodes.values()]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_softplus_stays_finite_where_ncnns_softplus_layer_overflows(tmp_path):
    model = one_node("Softplus", (1, 8), 13)
    x = np.array([[-30, -5, 0, 5, 30, 88, 100, 1000]], np.float32)
    check_in_ncnn(model, tmp_path, {"x": x})

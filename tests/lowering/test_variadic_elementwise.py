"""Max, Min, Mean and Sum over several operands (ONNX's variadic forms) in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

OPS = ("Max", "Min", "Mean", "Sum")


def variadic(op, shapes, constant=None):
    """op over inputs a, b, ... of these shapes, plus a constant operand when given."""
    names = [chr(ord("a") + i) for i in range(len(shapes))]
    inits = [("k", constant)] if constant is not None else []
    node = helper.make_node(op, names + [n for n, _ in inits], ["y"])
    return make_model([node], list(zip(names, shapes)), [("y", None)], inits)


@pytest.mark.parametrize("op", OPS)
def test_three_inputs(op, tmp_path):
    model = variadic(op, [(1, 3, 4, 5)] * 3)
    converted = check_in_ncnn(model, tmp_path)
    assert "BinaryOp" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("op", OPS)
def test_inputs_and_a_broadcast_constant(op, tmp_path):
    constant = np.linspace(-1, 1, 5, dtype=np.float32).reshape(1, 1, 1, 5)
    check_in_ncnn(variadic(op, [(1, 3, 4, 5)] * 2, constant), tmp_path)


@pytest.mark.parametrize("op", OPS)
def test_one_input_is_the_identity(op, tmp_path):
    check_in_ncnn(variadic(op, [(1, 6, 7)]), tmp_path)

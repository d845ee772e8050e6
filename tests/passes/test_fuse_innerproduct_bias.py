"""fuse_innerproduct_bias: MatMul + Add(bias per column) becomes one InnerProduct with a bias
where that computes the same numbers (real ncnn against onnxruntime, the interpreter against
real ncnn), and stays two layers where it would not."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(6)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def linear_model(x_shape, bias, bias_first=False, extra_nodes=(), outputs=(("y", None),)):
    add = helper.make_node("Add", ["B", "p"] if bias_first else ["p", "B"], ["y"])
    return make_model([helper.make_node("MatMul", ["x", "W"], ["p"]), add, *extra_nodes],
                      [("x", x_shape)], list(outputs), [("W", rand(x_shape[-1], 6)), ("B", bias)])


@pytest.mark.parametrize("x_shape, bias_shape, bias_first", [
    ((1, 5), (6,), False),              # one vector: ncnn 1-D
    ((4, 5), (6,), False),              # rows: ncnn 2-D, InnerProduct per row
    ((1, 4, 5), (1, 6), True),          # batch axis, bias written first, as (1, 6)
    ((1, 4, 5), (1, 1, 6), False),
])
def test_column_bias_fuses(x_shape, bias_shape, bias_first, tmp_path):
    model = linear_model(x_shape, rand(*bias_shape), bias_first)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["biases_fused"] == 1
    last = converted.graph.topological()[-1]
    if len(converted.graph.tensors["x"].ncnn_shape) == 2:      # rows: convert_innerproduct_gemm's Gemm, C the bias
        assert layers(converted) == ["Input", "Gemm"] and last.params[10] == 4
    else:
        assert layers(converted) == ["Input", "InnerProduct"] and last.params[1] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("why, x_shape, bias_shape", [
    ("a bias per row", (4, 5), (4, 1)),
    ("a full matrix", (4, 5), (4, 6)),
    ("the sum is larger than the product", (1, 5), (3, 6)),
])
def test_other_constants_stay_a_binaryop(why, x_shape, bias_shape, tmp_path):
    model = linear_model(x_shape, rand(*bias_shape))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["biases_fused"] == 0 and "BinaryOp" in layers(converted), why


def test_product_read_twice_is_not_fused(tmp_path):
    model = linear_model((4, 5), rand(6), extra_nodes=[helper.make_node("Mul", ["p", "y"], ["z"])],
                         outputs=[("z", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["biases_fused"] == 0


def test_product_that_is_a_graph_output_is_not_fused(tmp_path):
    model = linear_model((4, 5), rand(6), outputs=[("y", None), ("p", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["biases_fused"] == 0


def test_fused_bias_then_activation_is_one_layer(tmp_path):
    model = linear_model((1, 5), rand(6), extra_nodes=[helper.make_node("Relu", ["y"], ["z"])],
                         outputs=[("z", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert layers(converted) == ["Input", "InnerProduct"] and converted.stats["activations_fused"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)

"""convert_outer_matmul: a MatMul over an inner extent of 1 ((1, M, 1) x (1, 1, T), transformers 4's
rotary frequencies times positions) becomes a broadcast Mul, equal to onnxruntime in real ncnn at two
run-time lengths; an inner extent of 2 stays a MatMul."""
import numpy as np
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def outer(inner):
    nodes = [helper.make_node("MatMul", ["f", "p"], ["y"])]
    freqs = np.random.default_rng(3).uniform(-1, 1, (1, 8, inner)).astype(np.float32)
    return make_model(nodes, [("p", [1, inner, "T"])], [("y", None)], [("f", freqs)])


def test_inner_extent_one_is_a_mul(tmp_path):
    converted = assert_one_file_many_sizes(outer(1), tmp_path, [(5,), (11,)], dims=("T",), rtol=1e-6, atol=1e-7)
    assert converted.stats["outer_matmuls_converted"] == 1 and "MatMul" not in layers(converted)
    assert "BinaryOp" in layers(converted)


def test_inner_extent_two_stays(tmp_path):
    converted = check_in_ncnn(outer(2), tmp_path, dims={"T": 5})
    assert converted.stats["outer_matmuls_converted"] == 0 and "BinaryOp" not in layers(converted)

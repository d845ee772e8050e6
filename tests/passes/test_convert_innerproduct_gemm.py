"""convert_innerproduct_gemm: an InnerProduct over the rows of a 2-D blob becomes a Gemm with constant
B (and the bias as C), checked against onnxruntime in real ncnn and the interpreter against real ncnn;
a vector input stays an InnerProduct."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(21)
K, N = 12, 10


def linear(x_shape, bias=True):
    nodes = [helper.make_node("MatMul", ["x", "W"], ["p" if bias else "y"])]
    inits = [("W", RNG.uniform(-1, 1, (K, N)).astype(np.float32))]
    if bias:
        nodes.append(helper.make_node("Add", ["p", "B"], ["y"]))
        inits.append(("B", RNG.uniform(-1, 1, N).astype(np.float32)))
    return make_model(nodes, [("x", x_shape)], [("y", None)], inits)


@pytest.mark.parametrize("bias", [True, False])
def test_rows_become_gemm(bias, tmp_path):
    model = linear([1, 7, K], bias)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["gemm_converted"] == 1 and layers(converted) == ["Input", "Gemm"]
    params = converted.graph.topological()[-1].params
    assert (params[3], params[5], params[7], params[8], params[9], params[10]) == (1, 1, 7, N, K, 4 if bias else -1)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_run_time_row_count(tmp_path):
    converted = assert_one_file_many_sizes(linear([1, "T", K]), tmp_path, [(3,), (9,)], dims=("T",))
    assert layers(converted) == ["Input", "Gemm"] and converted.graph.topological()[-1].params[7] == 0


def test_a_vector_stays_innerproduct(tmp_path):
    converted = check_in_ncnn(linear([1, K]), tmp_path)
    assert converted.stats["gemm_converted"] == 0 and layers(converted) == ["Input", "InnerProduct"]

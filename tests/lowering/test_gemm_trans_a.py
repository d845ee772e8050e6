"""Gemm with transA=1 (A transposed by a Permute, or a Reshape when A is a row or column) against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

K, N = 5, 4


def rand(*shape):
    return np.random.default_rng(len(shape) + sum(shape)).uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("m", [3, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("b_kind", ["const", "input"])
@pytest.mark.parametrize("c_shape", [None, (1, N)], ids=["no_C", "C_1xN"])
def test_gemm_trans_a(m, trans_b, b_kind, c_shape, tmp_path):
    b_shape = (N, K) if trans_b else (K, N)
    inputs, inits, names = [("a", (K, m))], [], ["a", "b"]
    if b_kind == "const":
        inits.append(("b", rand(*b_shape)))
    else:
        inputs.append(("b", b_shape))
    if c_shape is not None:
        inits.append(("c", rand(*c_shape)))
        names.append("c")
    node = helper.make_node("Gemm", names, ["y"], transA=1, transB=trans_b, alpha=0.7, beta=1.3)
    model = make_model([node], inputs, [("y", None)], inits)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_gemm_trans_a_of_a_batched_row(tmp_path):
    """A of shape (1, M): ONNX's batch axis is its K axis, so A.T is a column of M rows."""
    node = helper.make_node("Gemm", ["a", "b"], ["y"], transA=1)
    model = make_model([node], [("a", (1, 3))], [("y", None)], [("b", rand(1, N))])
    check_in_ncnn(model, tmp_path)

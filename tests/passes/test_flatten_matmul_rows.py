"""flatten_matmul_rows: a MatMul of a batch of matrices (an ncnn 3-D/4-D blob) by a constant weight runs
as one Gemm over all the rows (with the bias), checked against onnxruntime in the real ncnn and the
interpreter; a run-time weight or a 2-D blob stays as it was."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(11)


def batched_matmul(a_shape=(4, 3, 8), n=6, bias=(6,), bias_first=False, weight_input=False):
    """y = Relu(A W [+ b]); the keywords pick variants."""
    k = a_shape[-1]
    inits = [] if weight_input else [("w", RNG.uniform(-1, 1, (k, n)).astype(np.float32))]
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"])]
    if bias is not None:
        inits.append(("b", RNG.uniform(-1, 1, bias).astype(np.float32)))
        nodes.append(helper.make_node("Add", ["b", "m"] if bias_first else ["m", "b"], ["mb"]))
    nodes.append(helper.make_node("Relu", [nodes[-1].output[0]], ["y"]))
    inputs = [("a", list(a_shape))] + ([("w", [k, n])] if weight_input else [])
    return make_model(nodes, inputs, [("y", None)], inits)


FIRES = {   # variant -> BinaryOps left
    "3-D batch with bias": ({}, 0),
    "bias written first": ({"bias_first": True}, 0),
    "bias (1, 1, N)": ({"bias": (1, 1, 6)}, 0),
    "no bias": ({"bias": None}, 0),
    "4-D with a leading 1": ({"a_shape": (1, 2, 3, 8)}, 0),
    "bias along the rows stays a BinaryOp": ({"bias": (3, 1)}, 1),
}


@pytest.mark.parametrize("variant, binary_ops", FIRES.values(), ids=FIRES.keys())
def test_batched_matmul_becomes_one_gemm(variant, binary_ops, tmp_path):
    model = batched_matmul(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["matmul_rows_flattened"] == 1
    types = layers(converted)
    assert types.count("Gemm") == 1 and "MatMul" not in types, types
    assert types.count("BinaryOp") == binary_ops, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "weight fed at run time": {"weight_input": True},
    "rows already a 2-D blob": {"a_shape": (1, 3, 8)},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_other_matmuls_stay(variant, tmp_path):
    model = batched_matmul(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["matmul_rows_flattened"] == 0
    check_interpreter_matches_ncnn(converted, model, tmp_path)

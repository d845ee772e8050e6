"""MatMul -> InnerProduct / MatMul in the REAL ncnn runtime vs onnxruntime, across ranks and batch-axis positions."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, make_model


def matmul_model(a_shape, b_shape, b_constant, pre=None):
    """Y = MatMul(A, B); B an initializer or a second input; `pre`: (op, attrs) applied to A first."""
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    nodes, a = [], "A"
    if pre is not None:
        nodes.append(helper.make_node(pre[0], ["A"], ["A2"], **pre[1]))
        a = "A2"
    nodes.append(helper.make_node("MatMul", [a, "B"], ["Y"]))
    inputs, inits = [("A", a_shape)], []
    if b_constant:
        inits.append(("B", rng.uniform(-1, 1, b_shape).astype(np.float32)))
    else:
        inputs.append(("B", b_shape))
    return make_model(nodes, inputs, [("Y", None)], inits)


def layer_types(converted):
    return sorted(n.op for n in converted.graph.nodes.values() if n.op not in ("Input", "MemoryData"))


@pytest.mark.parametrize("a_shape,b_shape,layer", [      # rows of a 2-D blob: Gemm (convert_innerproduct_gemm)
    ([1, 5, 4], [4, 3], "Gemm"), ([1, 4], [4, 3], "InnerProduct"), ([4], [4, 3], "InnerProduct"),
    ([5, 4], [4, 3], "Gemm"), ([1, 1, 4], [4, 3], "InnerProduct"),
])
def test_constant_2d_right_side_is_innerproduct(a_shape, b_shape, layer, tmp_path):
    converted = check_in_ncnn(matmul_model(a_shape, b_shape, True), tmp_path)
    assert layer_types(converted) == [layer]


def test_constant_2d_right_side_of_a_3d_blob_is_one_gemm_over_the_rows(tmp_path):
    """passes/flatten_matmul_rows.py: (2, 5) rows by a (4, 3) weight as one Gemm between Reshapes."""
    converted = check_in_ncnn(matmul_model([1, 2, 5, 4], [4, 3], True), tmp_path)
    assert sorted(layer_types(converted)) == ["Gemm", "Reshape", "Reshape"]


@pytest.mark.parametrize("a_shape,b_shape", [
    ([1, 5, 4], [2, 4, 3]),          # the constant's batch dim broadcasts the output
    ([1, 5, 4], [1, 4, 3]),          # the constant's extent-1 dim is the output's batch axis: dropped
    ([1, 2, 5, 4], [2, 1, 4, 3]),
    ([1, 2, 5, 4], [4]),
    ([1, 3, 2, 5, 4], [1, 3, 1, 4, 6]),
])
def test_constant_right_side_higher_rank(a_shape, b_shape, tmp_path):
    converted = check_in_ncnn(matmul_model(a_shape, b_shape, True), tmp_path)
    assert "MatMul" in layer_types(converted)


@pytest.mark.parametrize("a_shape,b_shape", [
    ([1, 2, 5, 4], [1, 2, 4, 5]),    # attention scores: both operands carry the batch axis
    ([1, 5, 4], [1, 4, 3]),
    ([1, 5, 4], [4, 3]),             # right side without batch axis
    ([3, 5, 4], [1, 4, 3]),          # right side's batch axis is a broadcast batch dim of the output
    ([1, 4], [4]),                   # matrix x vector, result () -> ncnn [1]
    ([4], [4]),                      # dot product
    ([1, 4], [2, 4, 3]),             # the output's batch axis is A's row axis: A is an ncnn vector
    ([2, 3, 4], [4]),
    ([1, 2, 3, 4], [4, 5]),
    ([5, 4], [1, 2, 4, 3]),
    ([1, 3, 1, 5, 4], [1, 3, 2, 4, 6]),
])
def test_dynamic_right_side(a_shape, b_shape, tmp_path):
    check_in_ncnn(matmul_model(a_shape, b_shape, False), tmp_path)


def test_batch_axis_as_row_axis_of_a_batched_left_side(tmp_path):
    # Transpose moves A's batch axis to the row position; A (3,1,4) @ B (3,4,5) -> (3,1,5), batch axis 1:
    # A is reshaped to (3,1,4), the product computed as (3,1,5) in ncnn, then reshaped to (3,5) (the
    # transpose's Noop before A's Reshape is folded into it: passes/fold_reshape_chains.py)
    model = matmul_model([1, 3, 4], [3, 4, 5], False, pre=("Transpose", {"perm": [1, 0, 2]}))
    converted = check_in_ncnn(model, tmp_path)
    assert layer_types(converted) == ["MatMul", "Reshape", "Reshape"]


def test_batch_axis_as_column_axis_of_the_right_side(tmp_path):
    # B (4,1) from a transposed (1,4) input has its batch axis at the column position: an ncnn vector
    nodes = [helper.make_node("Transpose", ["B"], ["BT"], perm=[1, 0]), helper.make_node("MatMul", ["A", "BT"], ["Y"])]
    model = make_model(nodes, [("A", [2, 3, 4]), ("B", [1, 4])], [("Y", None)])
    check_in_ncnn(model, tmp_path)


def test_dynamic_extents(tmp_path):
    check_in_ncnn(matmul_model([1, "T", 4], [4, 3], True), tmp_path, dims={"T": 6})
    check_in_ncnn(matmul_model([1, "T", 4], [1, 4, "S"], False), tmp_path, dims={"T": 6, "S": 2})
    check_in_ncnn(matmul_model([1, 2, "T", 4], [1, 2, 4, "T"], False), tmp_path, dims={"T": 3})


def test_more_than_four_ncnn_axes_is_refused(tmp_path):
    with pytest.raises(ConversionError, match="at most 4"):
        check_in_ncnn(matmul_model([1, 2, 2, 5, 4], [2, 1, 2, 4, 3], True), tmp_path)

"""GatherElements at many scattered constant positions along the last axis (DeBERTa's relative
attention) as a product with one-hot selection matrices, and a Gather of the one row of an
extent-1 batch axis (SigLIP's attention-pooled query) as a reshape: real ncnn and the
interpreter against onnxruntime, bit for bit."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def gather_elements_model(shape, indices):
    return make_model([helper.make_node("Relu", ["x"], ["r"]),
                       helper.make_node("GatherElements", ["r", "i"], ["y"], axis=-1)],
                      [("x", shape)], [("y", None)], [("i", np.asarray(indices, np.int64))])


def relative_positions(heads, queries, span):
    """c2p's index: clamp(q - k + span, 0, 2 span - 1), the same for every head."""
    q, k = np.arange(queries)[:, None], np.arange(queries)[None, :]
    table = np.clip(q - k + span, 0, 2 * span - 1)
    return np.broadcast_to(table, (1, heads, queries, queries))


@pytest.mark.parametrize("shape, indices", [
    ([1, 2, 8, 16], relative_positions(2, 8, 8)),                                      # broadcast over heads
    ([1, 3, 6, 10], np.random.default_rng(0).integers(-10, 10, (1, 3, 6, 7))),         # every row its own
    ([1, 6, 2, 9], np.broadcast_to(np.random.default_rng(1).integers(0, 9, (1, 6, 1, 9)), (1, 6, 2, 9))),
])
def test_scattered_positions_select_by_matmul(tmp_path, shape, indices):
    model = gather_elements_model(shape, indices)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert "MatMul" in ncnn_layer_types(converted) and "Crop" not in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("index", [0, -1, [0]])
def test_the_one_row_of_an_extent_1_batch_axis(tmp_path, index):
    """(1, T, E) moved to (T, 1, E): the batch axis is axis 1, and [:, 0] reads its one row."""
    model = make_model([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                        helper.make_node("Gather", ["t", "i"], ["y"], axis=1)],
                       [("x", [1, 3, 4])], [("y", None)], [("i", np.array(index, np.int64))])
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)

"""Expand with a constant shape in real ncnn against onnxruntime: every numpy broadcast case."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model

CASES = [
    ((1, 3, 1, 1), [1, 3, 4, 5]),     # the usual: extent-1 axes grow
    ((3, 1), [2, 3, 4]),              # rank growth
    ((4,), [1, 3, 4]),                # rank growth of a vector
    ((1, 3, 1), [2, 3, 4]),           # the batch axis repeated: the result has none
    ((1, 1, 5), [1, 4, 1]),           # ones in the shape keep x's extents
    ((1, 3, 4), [3, 1, 1]),           # a shape of lower rank whose outer axis grows
    ((1, 6), [6]),                    # nothing to do
    ((1, 6), [1, 1, 6]),              # only rank growth
    ((1, 2, 1, 4), [1, 1, 2, 3, 4]),  # rank 5 result
    ((5, 1, 1), [5, 2, 3]),           # no batch axis at all
]


@pytest.mark.parametrize("x_shape,shape", CASES, ids=str)
def test_expand(x_shape, shape, tmp_path):
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    model = make_model([node], [("x", x_shape)], [("y", None)], [("shape", np.array(shape, np.int64))])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_expand_writes_no_constant_of_the_result_size(tmp_path):
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    model = make_model([node], [("x", (1, 8, 1, 1))], [("y", None)],
                       [("shape", np.array([1, 8, 20, 20], np.int64))])
    converted = check_in_ncnn(model, tmp_path)
    assert [n.op for n in converted.graph.topological()] == ["Input", "Tile"]


@pytest.mark.parametrize("x_shape,shape", [((1, 1, 1, "S"), [1, 6, 1, 1]), ((1, "S", 1), [2, 1, 3])], ids=str)
def test_expand_keeps_a_run_time_extent(x_shape, shape, tmp_path):
    """A padding mask (1,1,1,S) expanded over heads: where the target asks 1, S stays as it is, one file
    for every S."""
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    model = make_model([node], [("x", x_shape)], [("y", None)], [("shape", np.array(shape, np.int64))])
    assert_one_file_many_sizes(model, tmp_path, [(3,), (7,)], dims=("S",))

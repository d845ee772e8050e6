"""Gather with constant indices and Cast on run-time tensors, in real ncnn against onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def gather_model(shape, indices, axis):
    return make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["y"], axis=axis)],
                      [("x", shape)], [("y", None)], [("i", np.array(indices, np.int64))])


@pytest.mark.parametrize("shape, indices, axis", [
    ([1, 4, 5, 6], 2, 1), ([1, 4, 5, 6], -1, 3), ([1, 4, 5, 6], [1, 2, 3], 2), ([1, 4, 5, 6], [3, 0, 1], 1),
    ([1, 6, 8], 0, 2), ([1, 6, 8], [5, 5], 1), ([2, 3, 4], 1, 0), ([2, 1, 16], 1, 0),
])
def test_gather_constant_indices(tmp_path, shape, indices, axis):
    model = gather_model(shape, indices, axis)
    converted = check_in_ncnn(model, tmp_path)
    assert "Crop" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("indices, why", [([[0, 1]], "only a scalar or a list"), (7, "out of range")])
def test_gather_refusals(indices, why):
    with pytest.raises(ConversionError, match=why):
        convert(gather_model([1, 4, 5, 6], indices, 1))


def test_gather_on_the_batch_axis_is_refused():
    with pytest.raises(ConversionError, match="batch axis"):
        convert(gather_model([1, 4, 5, 6], 0, 0))


@pytest.mark.parametrize("to, expect", [(TensorProto.FLOAT, "Noop"), (TensorProto.DOUBLE, "Noop"),
                                        (TensorProto.INT64, "UnaryOp"), (TensorProto.INT32, "UnaryOp")])
def test_cast(tmp_path, to, expect):
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=to), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, [("x", [1, 3, 4, 5])], [("y", [1, 3, 4, 5])])
    converted = check_in_ncnn(model, tmp_path, low=-5, high=5)
    assert expect in ncnn_layer_types(converted)


def test_cast_to_bool_is_refused():
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.BOOL), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    with pytest.raises(ConversionError, match="boolean"):
        convert(make_model(nodes, [("x", [1, 3, 4, 5])], [("y", [1, 3, 4, 5])]))

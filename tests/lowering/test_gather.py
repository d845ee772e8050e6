"""Gather: constant indices on run-time tensors (Crop/Concat/Reshape) and constant tables read at
run-time ids (Embed), in real ncnn and the interpreter against onnxruntime."""
import numpy as np
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
    ([1, 6, 8], [[0, 2], [-1, 3]], 1), ([1, 6, 8], [[1, 2, 3]], 2), ([10], [0, -9, -10], 0),
    ([5, 4, 3], [[4, 1]], 0), ([1, 4, 5, 6], [-2], -1),
    ([1, 4, 5, 6], [[[[0, 1]]]], 1),    # 7-D output: the indices' axes merge (passes/merge_wide_axes.py)
])
def test_gather_constant_indices(tmp_path, shape, indices, axis):
    model = gather_model(shape, indices, axis)
    converted = check_in_ncnn(model, tmp_path)
    assert "Crop" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("indices, why", [(7, "out of range"), (-7, "out of range")])
def test_gather_refusals(indices, why):
    with pytest.raises(ConversionError, match=why):
        convert(gather_model([1, 4, 5, 6], indices, 1))


def test_gather_on_the_batch_axis_reads_its_one_row(tmp_path):
    """The batch axis has extent 1: index 0 (or -1) is the whole tensor without that axis."""
    model = gather_model([1, 4, 5, 6], 0, 0)
    check_in_ncnn(model, tmp_path, rtol=0, atol=0)


def embedding_model(ids_shape, table_shape, ids_type=TensorProto.INT64, cast_to=None, after=()):
    """Gather(table, ids) -> optional extra nodes; ids a graph input of an integer type."""
    nodes, ids = [], "ids"
    if cast_to is not None:
        nodes.append(helper.make_node("Cast", ["ids"], ["ids_cast"], to=cast_to))
        ids = "ids_cast"
    nodes.append(helper.make_node("Gather", ["table", ids], ["y"]))
    table = np.random.default_rng(1).standard_normal(table_shape).astype(np.float32)
    return make_model(nodes + list(after), [("ids", ids_shape, ids_type)], [("y", None)], [("table", table)])


@pytest.mark.parametrize("ids_shape, table_shape, ids_type, cast_to", [
    ([1, 7], [11, 6], TensorProto.INT64, None), ([7], [11, 6], TensorProto.INT32, None),
    ([2, 3], [11, 6], TensorProto.INT64, None), ([1, 5], [11, 2, 3], TensorProto.INT64, TensorProto.INT32),
    ([], [11, 6], TensorProto.INT64, None), ([1, 4], [9], TensorProto.INT32, TensorProto.INT64),
])
def test_embedding(tmp_path, ids_shape, table_shape, ids_type, cast_to):
    model = embedding_model(ids_shape, table_shape, ids_type, cast_to)
    rng = np.random.default_rng(0)
    dtype = helper.tensor_dtype_to_np_dtype(ids_type)
    feeds = {"ids": rng.integers(0, table_shape[0], ids_shape).astype(dtype)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    assert "Embed" in ncnn_layer_types(converted)
    assert converted.io()["inputs"][0]["dtype"] == "int32"
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_embedding_along_another_axis_is_refused():
    model = make_model([helper.make_node("Gather", ["t", "ids"], ["y"], axis=1)], [("ids", [1, 4], TensorProto.INT64)],
                       [("y", None)], [("t", np.ones((5, 3), np.float32))])
    with pytest.raises(ConversionError, match="axis 1"):
        convert(model)

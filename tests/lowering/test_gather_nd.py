"""GatherND / GatherElements with constant indices on run-time data (a flat Gather: Crop runs,
Concat, Reshape), in real ncnn and the interpreter against onnxruntime; run-time indices refused."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def gather_model(op, shape, indices, **attrs):
    return make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op, ["r", "i"], ["y"], **attrs)],
                      [("x", shape)], [("y", None)], [("i", np.array(indices, np.int64))])


def check(model, tmp_path):
    converted = check_in_ncnn(model, tmp_path)
    assert "Crop" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("shape, indices, batch_dims", [
    ([1, 6, 5], [[0, 1], [0, 2], [0, 4]], 0),                  # rows of the one batch item
    ([1, 6, 5], [[[0, 5], [0, -1]]], 0),                       # negative, repeated, an index grid
    ([1, 6, 5], [[0, 1, 2], [0, 3, 4], [0, 3, 0]], 0),         # single elements
    ([1, 8], [[[[[0, k] for k in range(8)]]]], 0),             # torch.export's BERT mask expansion
    ([1, 6, 5], [[[4], [1]]], 1),                              # batch_dims 1: rows per batch item
    ([1, 6, 5], [[[4, 0], [1, 3]]], 1),
])
def test_gather_nd_constant_indices(tmp_path, shape, indices, batch_dims):
    check(gather_model("GatherND", shape, indices, batch_dims=batch_dims), tmp_path)


@pytest.mark.parametrize("axis, indices", [
    (0, np.zeros((1, 3, 5), np.int64)),
    (1, [[[3, 0, 1, 1, 2], [0, 0, 3, 2, 1]]]),
    (-1, [[[4, 0], [1, -1], [2, 2], [3, 3]]]),
    (2, [[[0, 1, 2, 3, 4]] * 4]),                               # position ids: one run
])
def test_gather_elements_along_each_axis(tmp_path, axis, indices):
    check(gather_model("GatherElements", [1, 4, 5], indices, axis=axis), tmp_path)


def test_runtime_indices_are_refused_in_one_line():
    """GPT-2/CLIP pooling reads the hidden state at a position computed from the ids."""
    model = make_model([helper.make_node("Cast", ["ids"], ["i"], to=TensorProto.INT64),
                        helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
                       [("x", [1, 6, 5]), ("ids", [1, 1], TensorProto.INT64)], [("y", None)])
    with pytest.raises(ConversionError, match=r"^GatherND node .*computed at run time[^\n]*$"):
        convert(model)


@pytest.mark.parametrize("op, indices, attrs, why", [
    ("GatherND", [[0, 6]], {}, "out of range"),
    ("GatherElements", [[[5, 0, 0, 0, 0]]], {"axis": 1}, "out of range"),
    ("GatherND", [[0, 1]], {"shape": [1, "T", 5]}, "unknown extents.*--input-shape"),
])
def test_bad_constant_indices_are_refused(op, indices, attrs, why):
    shape = attrs.pop("shape", [1, 4, 5])
    with pytest.raises(ConversionError, match=why):
        convert(gather_model(op, shape, indices, **attrs))

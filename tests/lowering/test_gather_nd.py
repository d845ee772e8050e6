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


def pooling_model(op):
    """CLIP/GPT-2 pooling: the hidden state at the position of the largest id (torch.export:
    GatherND at [0, argmax]; torch.jit: Gather of the flattened state at argmax + 0)."""
    nodes = [helper.make_node("Cast", ["ids"], ["ids_i"], to=TensorProto.INT32),
             helper.make_node("ArgMax", ["ids_i"], ["at"], axis=-1, keepdims=0)]
    if op == "GatherND":
        nodes += [helper.make_node("Unsqueeze", ["at", "minus_one"], ["at2"]),
                  helper.make_node("Concat", ["item", "at2"], ["where"], axis=-1),
                  helper.make_node("GatherND", ["h", "where"], ["y"])]
    else:
        nodes += [helper.make_node("Flatten", ["h"], ["rows"], axis=2),
                  helper.make_node("Add", ["at", "zero"], ["where"]),
                  helper.make_node("Gather", ["rows", "where"], ["y"], axis=0)]
    nodes.insert(0, helper.make_node("Relu", ["x"], ["h"]))
    return make_model(nodes, [("x", [1, 6, 5]), ("ids", [1, 6], TensorProto.INT64)], [("y", None)],
                      [("minus_one", np.array([-1], np.int64)), ("item", np.zeros((1, 1), np.int64)),
                       ("zero", np.zeros(1, np.int64))])


@pytest.mark.parametrize("op", ["GatherND", "Gather"])
@pytest.mark.parametrize("ids", [[3, 9, 1, 9, 0, 2], [7, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 4]])
def test_pooling_at_the_argmax_of_the_ids(tmp_path, op, ids):
    """Ties pick the first position, as onnxruntime's ArgMax does."""
    model = pooling_model(op)
    feeds = {"x": np.random.default_rng(1).uniform(-2, 2, (1, 6, 5)).astype(np.float32),
             "ids": np.array([ids], np.int64)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=0, atol=0)
    assert "MatMul" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("batch_dims, ids", [
    (0, [[0, 3, 4], [0, 1, -1], [0, -4, 0]]), (0, [[0, 2], [0, -1]]),
    (1, [[[3], [0], [-1]]]), (1, [[[1, 4], [3, -5]]]),
])
def test_runtime_index_tuples(tmp_path, batch_dims, ids):
    """Index tuples read from an input: linear positions by a dot product with the strides."""
    ids = np.array(ids, np.int64)
    model = make_model([helper.make_node("Cast", ["ids"], ["i"], to=TensorProto.INT64),
                        helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
                       [("x", [1, 4, 5]), ("ids", list(ids.shape), TensorProto.INT64)], [("y", None)])
    feeds = {"x": np.random.default_rng(2).uniform(-2, 2, (1, 4, 5)).astype(np.float32), "ids": ids}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("op, indices, attrs, why", [
    ("GatherND", [[0, 6]], {}, "out of range"),
    ("GatherElements", [[[5, 0, 0, 0, 0]]], {"axis": 1}, "out of range"),
    ("GatherND", [[0, 1]], {"shape": [1, "T", 5]}, "unknown extents.*--input-shape"),
])
def test_bad_constant_indices_are_refused(op, indices, attrs, why):
    shape = attrs.pop("shape", [1, 4, 5])
    with pytest.raises(ConversionError, match=why):
        convert(gather_model(op, shape, indices, **attrs))


def test_gather_nd_keeps_the_batch_axis_a_transpose_moved(tmp_path):
    """Falcon's rotary slice under torch.export: the batch axis moved to axis 1 by a Transpose, a row
    picked along axis 0 by GatherND, then sliced: the picked blob keeps ncnn's rank (batch dropped)."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1, 3]),
             helper.make_node("GatherND", ["t", "i"], ["g"], batch_dims=0),
             helper.make_node("Transpose", ["g"], ["u"], perm=[1, 0, 2, 3]),
             helper.make_node("Slice", ["u", "starts", "ends", "axes"], ["y"])]
    inits = [("i", np.array([[-2]], np.int64)), ("starts", np.array([0], np.int64)),
             ("ends", np.array([4], np.int64)), ("axes", np.array([3], np.int64))]
    check(make_model(nodes, [("x", [1, 8, 6, 8])], [("y", None)], inits), tmp_path)

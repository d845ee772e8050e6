"""ScatterND (Swin's shifted-window mask: zeros of the feature map's size, window ids written in)
folds to a constant once the sizes are static; otherwise refused in one line that says how."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def window_mask_model():
    """mask = zeros(1, H, W, 1) with three cells set, added to x (1, 1, H, W) as (1, 1, H, W)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "hw_axes"], ["hw"], axis=0),
             helper.make_node("Concat", ["one", "hw", "one"], ["mask_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["mask_shape"], ["zeros"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("ScatterND", ["zeros", "cells", "ids"], ["mask"]),
             helper.make_node("Transpose", ["mask"], ["mask_t"], perm=[0, 3, 1, 2]),
             helper.make_node("Add", ["x", "mask_t"], ["y"])]
    cells = np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 3, 0]], np.int64)
    return make_model(nodes, [("x", [1, 1, "H", "W"])], [("y", None)],
                      [("hw_axes", np.array([2, 3], np.int64)), ("one", np.array([1], np.int64)),
                       ("cells", cells), ("ids", np.array([1.0, 2.0, 3.0], np.float32))])


def test_scatter_folds_with_static_sizes(tmp_path):
    model = window_mask_model()
    converted = check_in_ncnn(model, tmp_path, dims={"H": 4, "W": 5}, input_shapes={"x": [1, 1, 4, 5]})
    assert ncnn_layer_types(converted) == ["Input", "MemoryData", "BinaryOp"]


def test_scatter_of_run_time_size_asks_for_input_shape():
    with pytest.raises(ConversionError, match=r"^[^\n]*--input-shape[^\n]*$"):
        convert(window_mask_model())


def scatter_model(data_shape, indices, updates_shape, **attrs):
    return make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ScatterND", ["r", "i", "u"], ["y"], **attrs)],
                      [("x", data_shape), ("u", updates_shape)], [("y", None)], [("i", np.array(indices, np.int64))],
                      opset=16)


def slice_indices(shape, axis, start, end):
    """The index tuples torch.export writes for x[..., start:end] = u along `axis`."""
    ranges = [range(start, end) if a == axis else range(d) for a, d in enumerate(shape)]
    grid = np.stack(np.meshgrid(*ranges, indexing="ij"), -1)
    return grid, list(grid.shape[:-1])


@pytest.mark.parametrize("shape, axis, start, end", [
    ([1, 4, 6], 2, 1, 3), ([1, 4, 6], 1, 0, 2), ([1, 4, 6], 2, 4, 6), ([1, 3, 4, 5], 2, 1, 2), ([1, 4, 6], 2, 0, 6)])
def test_slice_assignment_is_a_concat(tmp_path, shape, axis, start, end):
    indices, updates_shape = slice_indices(shape, axis, start, end)
    model = scatter_model(shape, indices, updates_shape)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert "Concat" in ncnn_layer_types(converted) or (start, end) == (0, shape[axis])
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def box_indices(shape, box):
    """The index tuples for x[box] = u, `box` a (start, end) per axis: element-wise (the last axis too),
    as torch's export of Tensor.slice_copy writes them."""
    grid = np.stack(np.meshgrid(*[range(a, b) for a, b in box], indexing="ij"), -1)
    return grid, list(grid.shape[:-1])


@pytest.mark.parametrize("shape, box", [
    ([1, 5, 6, 7], [(0, 1), (0, 5), (1, 2), (2, 4)]),        # x[:, :, 1, 2:4] = u
    ([1, 5, 6, 7], [(0, 1), (1, 3), (2, 5), (0, 7)]),        # x[:, 1:3, 2:5] = u
    ([1, 5, 6, 7], [(0, 1), (4, 5), (0, 2), (6, 7)]),        # a corner: one Crop per cut axis
])
def test_box_assignment_is_nested_concats(tmp_path, shape, box):
    indices, updates_shape = box_indices(shape, box)
    model = scatter_model(shape, indices, updates_shape)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    cut = sum((a, b) != (0, n) for (a, b), n in zip(box, shape))
    types = ncnn_layer_types(converted)
    assert types.count("Concat") == cut and "Embed" not in types and types.count("Crop") <= 3 * cut


def test_updates_written_over_each_other_are_no_box(tmp_path):
    """Two writes to one element: the later wins, so the updates are not laid in order: the general gather."""
    indices, _ = box_indices([1, 5, 6, 7], [(0, 1), (1, 3), (2, 5), (0, 7)])
    indices = np.concatenate([indices.reshape(-1, 4), indices.reshape(-1, 4)[:1]])
    model = scatter_model([1, 5, 6, 7], indices, [len(indices)])
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert not [n for n in converted.graph.topological() if n.name.endswith("_assign0")]


@pytest.mark.parametrize("indices, updates_shape", [
    ([[0, 2, 1], [0, 0, 5], [0, -1, -2]], [3]),          # single elements, negative indices
    ([[0, 3], [0, 1]], [2, 6]),                          # whole rows, out of order
])
def test_scattered_writes_gather_data_and_updates(tmp_path, indices, updates_shape):
    model = scatter_model([1, 4, 6], indices, updates_shape)
    check_interpreter_matches_ncnn(check_in_ncnn(model, tmp_path, rtol=0, atol=0), model, tmp_path)


def test_scatter_with_reduction_or_run_time_indices_is_refused_in_one_line():
    with pytest.raises(ConversionError, match=r"^ScatterND node [^\n]*no scatter layer[^\n]*$"):
        convert(scatter_model([1, 4, 6], [[0, 1, 1]], [1], reduction="add"))
    model = make_model([helper.make_node("Cast", ["ids"], ["i"], to=TensorProto.INT64),
                        helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
                       [("x", [1, 4]), ("ids", [1, 2]), ("u", [1])], [("y", None)])
    with pytest.raises(ConversionError, match=r"^ScatterND node [^\n]*no scatter layer[^\n]*$"):
        convert(model)

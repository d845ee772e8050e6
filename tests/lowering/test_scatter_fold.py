"""ScatterND (Swin's shifted-window mask: zeros of the feature map's size, window ids written in)
folds to a constant once the sizes are static; otherwise refused in one line that says how."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, make_model, ncnn_layer_types


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


def test_scatter_into_run_time_values_is_refused_in_one_line():
    model = make_model([helper.make_node("ScatterND", ["x", "cells", "ids"], ["y"])], [("x", [1, 4])], [("y", None)],
                       [("cells", np.array([[0, 1]], np.int64)), ("ids", np.array([5.0], np.float32))])
    with pytest.raises(ConversionError, match=r"^ScatterND node [^\n]*no scatter layer[^\n]*graph input[^\n]*$"):
        convert(model)

"""ScatterElements and the older Scatter: with constant data, indices and updates they fold to a
constant (real ncnn against onnxruntime); with run-time data, refused in one line naming the node
(ncnn has no scatter layer)."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, make_model, ncnn_layer_types

DATA = np.arange(12, dtype=np.float32).reshape(3, 4)
INDICES = np.array([[2, 0, 1, 0], [0, 1, 2, 2]], np.int64)
UPDATES = -np.ones((2, 4), np.float32)
# Scatter is ScatterElements' name before opset 11
OPSETS = {"ScatterElements": 13, "Scatter": 10}


def scatter_plus_x(op, data_is_input):
    """y = x + scatter(data, indices, updates, axis=0), data a graph input or a constant."""
    nodes = [helper.make_node(op, ["data", "i", "u"], ["s"], axis=0), helper.make_node("Add", ["x", "s"], ["y"])]
    inputs = [("x", [3, 4])] + ([("data", [3, 4])] if data_is_input else [])
    inits = [("i", INDICES), ("u", UPDATES)] + ([] if data_is_input else [("data", DATA)])
    return make_model(nodes, inputs, [("y", [3, 4])], inits, opset=OPSETS[op])


@pytest.mark.parametrize("op", OPSETS)
def test_constant_scatter_folds(op, tmp_path):
    converted = check_in_ncnn(scatter_plus_x(op, data_is_input=False), tmp_path)
    assert ncnn_layer_types(converted) == ["Input", "MemoryData", "BinaryOp"]


@pytest.mark.parametrize("op", OPSETS)
def test_run_time_data_is_refused_in_one_line(op):
    with pytest.raises(ConversionError, match=rf"^[^\n]*{op}[^\n]*no scatter layer[^\n]*$"):
        convert(scatter_plus_x(op, data_is_input=True))

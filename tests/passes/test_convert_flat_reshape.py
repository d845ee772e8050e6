"""convert_flat_reshape: a Reshape to one axis becomes a Flatten, checked against onnxruntime in real
ncnn (and the interpreter against real ncnn) for a static, a run-time and a picked-row input; a
Reshape to more axes stays."""
import numpy as np
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def reshaped(x_shape, target):
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    return make_model(nodes, [("x", x_shape)], [("y", None)], [("s", np.array(target, np.int64))])


def test_static_packed_input(tmp_path):
    # [8, 4, 4] is packed by 8 (or 4) channels on x86: Flatten must unpack it in row-major order
    model = reshaped([1, 8, 4, 4], [1, 128])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["reshapes_flattened"] == 1 and layers(converted) == ["Input", "Flatten", "ReLU"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_run_time_length(tmp_path):
    converted = assert_one_file_many_sizes(reshaped([1, "T", 4], [1, -1]), tmp_path, [(3,), (6,)], dims=("T",))
    assert layers(converted) == ["Input", "Flatten", "ReLU"]


def test_picked_row(tmp_path):
    # a ViT's class token: Gather one row of the sequence -> Crop, then the flat row
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1)
    model = make_model([node], [("x", [1, 5, 8])], [("y", None)], [("i", np.array(0, np.int64))])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["reshapes_flattened"] == 1 and "Reshape" not in layers(converted)


def test_more_axes_stay(tmp_path):
    converted = check_in_ncnn(reshaped([1, 8, 4, 4], [1, 8, 16]), tmp_path)
    assert converted.stats["reshapes_flattened"] == 0 and "Reshape" in layers(converted)

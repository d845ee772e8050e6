"""fold_reshape_chains: a Reshape of a Reshape becomes one Reshape from the first one's input, checked
against onnxruntime in real ncnn (and the interpreter against real ncnn); a first Reshape with
another reader stays, and one file still runs at several sizes when extents are run-time ones."""
import numpy as np
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def chain(x_shape, targets, extra_reader=False):
    """x -> Reshape(targets[0]) -> Reshape(targets[1]) ... -> Relu -> y (and Relu of the first
    reshape -> z when `extra_reader`)."""
    nodes, inits, prev = [], [], "x"
    for i, target in enumerate(targets):
        inits.append((f"s{i}", np.array(target, np.int64)))
        nodes.append(helper.make_node("Reshape", [prev, f"s{i}"], [f"r{i}"]))
        prev = f"r{i}"
    nodes.append(helper.make_node("Relu", [prev], ["y"]))
    outputs = [("y", None)]
    if extra_reader:
        nodes.append(helper.make_node("Sigmoid", ["r0"], ["z"]))
        outputs.append(("z", None))
    return make_model(nodes, [("x", x_shape)], outputs, inits)


def test_three_reshapes_become_one(tmp_path):
    model = chain([1, 2, 3, 4], [[1, 6, 4], [1, 3, 2, 4], [1, 4, 6]])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["reshapes_folded"] == 2
    assert layers(converted) == ["Input", "Reshape", "ReLU"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_back_to_the_input_shape_is_a_noop(tmp_path):
    converted = check_in_ncnn(chain([1, 6, 4], [[1, 24], [1, 6, 4]]), tmp_path)
    assert converted.stats["reshapes_folded"] == 1 and "Reshape" not in layers(converted)


def test_a_reshape_read_twice_stays(tmp_path):
    converted = check_in_ncnn(chain([1, 6, 4], [[1, 4, 6], [1, 2, 12]], extra_reader=True), tmp_path)
    assert converted.stats["reshapes_folded"] == 0 and layers(converted).count("Reshape") == 2


def test_run_time_extents(tmp_path):
    # [1, T, 8] -> [1, T, 2, 4] -> [1, T * 8]: the second target is inferred (-1), so it folds (and,
    # being one axis, becomes a Flatten: passes/convert_flat_reshape.py)
    converted = assert_one_file_many_sizes(chain([1, "T", 8], [[1, -1, 2, 4], [1, -1]]), tmp_path,
                                           [(3,), (5,)], dims=("T",))
    assert converted.stats["reshapes_folded"] == 1 and layers(converted) == ["Input", "Flatten", "ReLU"]


def test_a_flatten_after_a_reshape_folds(tmp_path):
    """A Flatten is a Reshape to one axis: x -> Reshape -> Flatten is one layer from x."""
    model = chain([1, 2, 3, 4], [[1, 6, 4]])
    model.graph.node.insert(1, helper.make_node("Flatten", ["r0"], ["f"], axis=1))
    model.graph.node[2].input[0] = "f"
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["reshapes_folded"] == 1
    assert layers(converted) == ["Input", "Flatten", "ReLU"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)

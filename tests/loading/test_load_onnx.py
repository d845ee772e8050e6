"""Loading: old opsets, external data, initializers listed as inputs, default batch, fp16 weights."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import ConversionError, convert
from onnx_cases import assert_matches_reference, make_model, random_inputs, run_converted_in_ncnn


def legacy_model(axis, b_shape, b_const):
    """Opset 6 Add with broadcast=1, axis=k: B aligned to A starting at axis k."""
    node = helper.make_node("Add", ["A", "B"], ["C"], broadcast=1, axis=axis)
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 3, 4, 5])]
    inits = []
    b = np.arange(np.prod(b_shape), dtype=np.float32).reshape(b_shape) / 7
    if b_const:    # ir_version 3 lists every initializer as a graph input too
        inits.append(numpy_helper.from_array(b, "B"))
    inputs.append(helper.make_tensor_value_info("B", TensorProto.FLOAT, b_shape))
    graph = helper.make_graph([node], "legacy", inputs,
                              [helper.make_tensor_value_info("C", TensorProto.FLOAT, [1, 3, 4, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 3
    return model, b


@pytest.mark.parametrize("axis, b_shape", [(1, [3]), (1, [3, 4]), (2, [4]), (2, [4, 5]), (-3, [3])])
@pytest.mark.parametrize("b_const", [True, False])
def test_opset6_broadcast_axis(tmp_path, axis, b_shape, b_const):
    model, b = legacy_model(axis, b_shape, b_const)
    start = axis % 4
    trailing = [1] * (4 - start - len(b_shape))
    # the reference: the same computation written for today's onnxruntime (numpy rule, B padded)
    modern = make_model([helper.make_node("Add", ["A", "B"], ["C"])], [("A", [1, 3, 4, 5])],
                        [("C", [1, 3, 4, 5])], [("B", b.reshape(b_shape + trailing))])
    feeds = random_inputs(modern)
    if not b_const:
        feeds["B"] = b
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(modern, {"A": feeds["A"]}, outputs)


def test_initializer_listed_as_input_is_a_constant(tmp_path):
    model = make_model([helper.make_node("Mul", ["x", "w"], ["y"])], [("x", [1, 2, 3])],
                       [("y", [1, 2, 3])], [("w", np.full(3, 2.0, np.float32))])
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]))
    converted = convert(model)
    assert converted.graph.inputs == ["x"]
    feeds = random_inputs(model)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)


def test_dynamic_leading_dim_defaults_to_one():
    model = make_model([helper.make_node("Mul", ["x", "w"], ["y"])], [("x", ["N", 2, 3])],
                       [("y", ["N", 2, 3])], [("w", np.full(3, 2.0, np.float32))])
    io = convert(model).io()
    assert io["inputs"][0]["onnx_shape"] == [1, 2, 3]
    assert io["inputs"][0]["batch_axis"] == 0


def test_input_shape_fixes_dynamic_dims():
    model = make_model([helper.make_node("Mul", ["x", "w"], ["y"])], [("x", ["N", "T", 3])],
                       [("y", ["N", "T", 3])], [("w", np.full(3, 2.0, np.float32))])
    io = convert(model, input_shapes={"x": [1, 7, 3]}).io()
    assert io["inputs"][0]["ncnn_shape"] == [7, 3]
    assert io["outputs"][0]["ncnn_shape"] == [7, 3]


@pytest.mark.parametrize("input_shapes, want", [
    ({}, [2, 1, 3]), ({"x": [1, 5]}, [2, 1, 3]), ({"x": [4, 5]}, [2, 4, 3]), ({"x": [None, 5]}, [2, None, 3])])
def test_inputs_sharing_a_dim_name_share_its_size(input_shapes, want):
    """state [2, N, 3] has a fixed leading dim, but its N is x's N: fixed (or defaulted to 1) with it."""
    model = make_model([helper.make_node("Gather", ["state", "i"], ["h"], axis=0),
                        helper.make_node("Add", ["h", "x0"], ["y"]),
                        helper.make_node("ReduceSum", ["x", "a"], ["x0"], keepdims=1)],
                       [("x", ["N", "T"]), ("state", [2, "N", 3])], [("y", None)],
                       [("i", np.array(0, np.int64)), ("a", np.array([1], np.int64))])
    io = convert(model, input_shapes=input_shapes).io()
    assert io["inputs"][1]["onnx_shape"] == want


def _external_model(tmp_path, location):
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [("x", [1, 4, 64])],
                       [("y", [1, 4, 64])], [("w", np.linspace(0, 1, 64, dtype=np.float32))])
    stored = onnx.ModelProto.FromString(model.SerializeToString())   # save() moves data out in place
    onnx.save(stored, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location=location, size_threshold=0)
    return model


def test_external_data_beside_the_model(tmp_path):
    model = _external_model(tmp_path, "m.weights")
    feeds = random_inputs(model)
    converted = convert(tmp_path / "m.onnx")
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    from converter.ncnn_side.runtime import run_ncnn
    out = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": feeds["x"][0]}, ["y"])["y"]
    assert_matches_reference(model, feeds, {"y": out})


def test_external_data_outside_the_folder_is_refused(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    _external_model(inner, "m.weights")
    (inner / "m.weights").rename(tmp_path / "m.weights")
    m = onnx.load(str(inner / "m.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = "../m.weights"
    onnx.save(m, str(inner / "m.onnx"))
    with pytest.raises(ConversionError, match="inside"):
        convert(inner / "m.onnx")


def test_fp16_weights(tmp_path):
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [("x", [1, 3, 4])],
                       [("y", [1, 3, 4])], [("w", np.linspace(-1, 1, 4, dtype=np.float32))])
    converted = convert(model)
    converted.save(tmp_path / "a.param", tmp_path / "a.bin", fp16=True)
    from converter.ncnn_side.reader import read_ncnn
    assert read_ncnn(tmp_path / "a.param", tmp_path / "a.bin").nodes   # loads back

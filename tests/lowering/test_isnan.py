"""IsNaN as data: 1 - [x - x > -1] - [|x| > FLT_MAX] with ncnn's Threshold, exact on finite values, +-inf and
NaN in the real runtime; a Where that would replace the NaNs it finds is refused (its select is arithmetic)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import ncnn_layer_types, onnxruntime_outputs, run_converted_in_ncnn

VALUES = np.array([[0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan],
                   [3.4e38, -3.4e38, 1e-45, -1e-45, np.nan, 7.0, np.inf, 0.25]], np.float32)


def isnan_model(count=True):
    """y = IsNaN(x) as a float (and, with `count`, how many NaNs per row: data, not a guard)."""
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"], name="test"),
             helper.make_node("Cast", ["nan"], ["y"], to=TensorProto.FLOAT)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8])]
    if count:
        nodes.append(helper.make_node("ReduceSum", ["y", "axes"], ["count"], keepdims=0))
        outputs.append(helper.make_tensor_value_info("count", TensorProto.FLOAT, [1, 2]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8])],
                              outputs, [numpy_helper.from_array(np.array([2], np.int64), "axes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_isnan_is_exact_in_ncnn(tmp_path):
    model = isnan_model()
    feeds = {"x": VALUES[None]}
    converted, got = run_converted_in_ncnn(model, feeds, tmp_path)
    assert "Threshold" in ncnn_layer_types(converted)
    for name, want in onnxruntime_outputs(model, feeds).items():
        np.testing.assert_array_equal(got[name].reshape(want.shape), want, err_msg=name)
    assert got["count"].reshape(-1).tolist() == [2.0, 1.0]


def test_isnan_in_the_interpreter():
    model = isnan_model()
    got = convert(model).run({"x": VALUES[None]})
    np.testing.assert_array_equal(got["y"], np.isnan(VALUES[None]).astype(np.float32))


def test_a_where_replacing_the_nans_is_refused():
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"], name="test"),
             helper.make_node("Where", ["nan", "zero", "x"], ["y"], name="clean")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8])],
                              [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    with pytest.raises(ConversionError, match="Where node 'clean' replaces the NaNs"):
        convert(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))

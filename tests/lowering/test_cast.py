"""Cast in real ncnn against onnxruntime: Noop where ncnn's float32 numbers do not change,
UnaryOp trunc to integers, sign(|x|) to bool; the rest refused."""
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


@pytest.mark.parametrize("to, expect", [(TensorProto.FLOAT, "Noop"), (TensorProto.DOUBLE, "Noop"),
                                        (TensorProto.INT64, "UnaryOp"), (TensorProto.INT32, "UnaryOp"),
                                        (TensorProto.BOOL, "UnaryOp")])
def test_cast_and_back(tmp_path, to, expect):
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=to), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, [("x", [1, 3, 4, 5])], [("y", [1, 3, 4, 5])])
    converted = check_in_ncnn(model, tmp_path, low=-5, high=5)
    assert expect in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("source, to", [(TensorProto.INT64, TensorProto.INT32), (TensorProto.INT32, TensorProto.INT64),
                                        (TensorProto.BOOL, TensorProto.FLOAT), (TensorProto.INT64, TensorProto.FLOAT)])
def test_integer_and_bool_inputs_are_float_numbers(tmp_path, source, to):
    nodes = [helper.make_node("Cast", ["m"], ["c"], to=to), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, [("m", [1, 2, 6], source)], [("y", [1, 2, 6])])
    converted = check_in_ncnn(model, tmp_path, high=9)
    assert [e["dtype"] for e in converted.io()["inputs"]] == ["float32"]
    assert set(ncnn_layer_types(converted)) <= {"Input", "Noop"}


def test_narrowing_integer_cast_is_refused():
    nodes = [helper.make_node("Cast", ["m"], ["c"], to=TensorProto.INT8), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    with pytest.raises(ConversionError, match="wraps around"):
        convert(make_model(nodes, [("m", [1, 6], TensorProto.INT32)], [("y", [1, 6])]))


def test_cast_to_float16_warns(tmp_path):
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT16), helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    converted = convert(make_model(nodes, [("x", [1, 6])], [("y", [1, 6])]))
    assert any("float16" in w for w in converted.stats["warnings"])

"""torch.export's atan2, Where(IsNaN(r), 0, r) over atan(y / x) moved by +-pi: the IsNaN becomes a
test of y == x == 0, in real ncnn and the interpreter against onnxruntime (with the 0 / 0,
x == 0 and y == 0 points fed)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import assert_matches_reference, check_in_ncnn, check_interpreter_matches_ncnn, make_model


def atan2_model(x_shape=(3, 16), y_shape=(3, 16), x_constant=None):
    """onnxscript's atan2 decomposition as torch.onnx.export(dynamo=True) writes it."""
    nodes = [helper.make_node("Div", ["y", "x"], ["d"]),
             helper.make_node("Atan", ["d"], ["a"]),
             helper.make_node("Greater", ["y", "zero"], ["y_pos"]),
             helper.make_node("Add", ["a", "pi"], ["a_up"]),
             helper.make_node("Sub", ["a", "pi"], ["a_down"]),
             helper.make_node("Where", ["y_pos", "a_up", "a_down"], ["moved"]),
             helper.make_node("Less", ["x", "zero"], ["x_neg"]),
             helper.make_node("Where", ["x_neg", "moved", "a"], ["r"]),
             helper.make_node("IsNaN", ["r"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "r"], ["out"])]
    inputs = [("y", list(y_shape))] + ([] if x_constant is not None else [("x", list(x_shape))])
    consts = [("zero", np.array(0, np.float32)), ("pi", np.array(np.pi, np.float32))]
    consts += [] if x_constant is None else [("x", x_constant)]
    return make_model(nodes, inputs, [("out", None)], consts, opset=18)


def feeds_with_zeros(shape, seed):
    """Zero with probability 0.4 each: y and x drawn apart give 0 / 0, y / 0 and 0 / x points."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-2, 2, shape).astype(np.float32)
    return np.where(rng.uniform(size=shape) < 0.4, np.float32(0), values)


@pytest.mark.parametrize("y_shape,x_shape", [((3, 16), (3, 16)), ((1, 3, 5, 7), (3, 5, 7)), ((5, 9, 3), (3,))],
                         ids=str)
def test_atan2_guard_matches(tmp_path, y_shape, x_shape):
    model = atan2_model(x_shape, y_shape)
    feeds = {"y": feeds_with_zeros(y_shape, 0), "x": feeds_with_zeros(x_shape, 1)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=1e-5, atol=1e-5)
    assert converted.stats["division_nan_guards"] == 1
    assert_matches_reference(model, feeds, converted.run(feeds), rtol=1e-5, atol=1e-5)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_atan2_by_constant(tmp_path):
    x = np.random.default_rng(2).uniform(-2, 2, (5, 9, 3)).astype(np.float32)
    x[0, :4] = 0
    model = atan2_model(y_shape=(5, 9, 3), x_constant=x)
    feeds = {"y": feeds_with_zeros((5, 9, 3), 3)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=1e-5, atol=1e-5)
    assert_matches_reference(model, feeds, converted.run(feeds), rtol=1e-5, atol=1e-5)


def test_guard_over_a_value_read_elsewhere_is_still_refused():
    """The division's NaN would be hidden from a second reader of it: no rewrite."""
    model = atan2_model()
    model.graph.node.append(helper.make_node("Neg", ["d"], ["d_neg"]))
    model.graph.output.append(helper.make_tensor_value_info("d_neg", TensorProto.FLOAT, [3, 16]))
    with pytest.raises(ConversionError, match="IsNaN node .*replaces the NaNs"):
        convert(model)


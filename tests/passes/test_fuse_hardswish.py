"""The decomposed hard-swish exporters write becomes one ncnn HardSwish, checked in real ncnn."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

SHAPE = [1, 4, 5, 6]


def scalar(name, value):
    return (name, np.array(value, np.float32))


def clip_nodes(opset):
    if opset < 11:
        return [helper.make_node("Clip", ["a"], ["c"], min=0.0, max=6.0)], []
    return [helper.make_node("Clip", ["a", "lo", "hi"], ["c"])], [scalar("lo", 0.0), scalar("hi", 6.0)]


def torch_style(order, opset=13):
    """x * clip(x + 3, 0, 6) / 6 in the orders exporters write."""
    clip, consts = clip_nodes(opset)
    nodes = [helper.make_node("Add", ["x", "three"], ["a"]), *clip]
    if order == "mul_then_div":
        nodes += [helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
    elif order == "clip_first_mul_sixth":
        nodes += [helper.make_node("Mul", ["c", "x"], ["m"]), helper.make_node("Mul", ["m", "sixth"], ["y"])]
    else:   # div_then_mul
        nodes += [helper.make_node("Div", ["c", "six"], ["d"]), helper.make_node("Mul", ["x", "d"], ["y"])]
    inits = [scalar("three", 3.0), scalar("six", 6.0), scalar("sixth", 1 / 6), *consts]
    used = {i for n in nodes for i in n.input}
    return make_model(nodes, [("x", SHAPE)], [("y", SHAPE)], [i for i in inits if i[0] in used], opset=opset)


@pytest.mark.parametrize("order", ["mul_then_div", "clip_first_mul_sixth", "div_then_mul"])
@pytest.mark.parametrize("opset", [9, 13])
def test_torch_style_fuses(tmp_path, order, opset):
    model = torch_style(order, opset)
    converted = check_in_ncnn(model, tmp_path, low=-5, high=5)
    assert ncnn_layer_types(converted) == ["Input", "HardSwish"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_paddle_hardsigmoid_form_fuses(tmp_path):
    model = make_model([helper.make_node("HardSigmoid", ["x"], ["h"], alpha=1 / 6, beta=0.5),
                        helper.make_node("Mul", ["x", "h"], ["y"])], [("x", SHAPE)], [("y", SHAPE)])
    converted = check_in_ncnn(model, tmp_path, low=-5, high=5)
    assert ncnn_layer_types(converted) == ["Input", "HardSwish"]


@pytest.mark.parametrize("case", ["other_bounds", "clip_read_twice", "other_hardsigmoid"])
def test_near_misses_stay_unfused_and_right(tmp_path, case):
    if case == "other_bounds":
        nodes = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["c"]),
                 helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
        inits, outputs = [scalar("three", 3.0), scalar("lo", 0.0), scalar("hi", 5.0), scalar("six", 6.0)], [("y", SHAPE)]
    elif case == "clip_read_twice":
        nodes = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["c"]),
                 helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
        inits, outputs = [scalar("three", 3.0), scalar("lo", 0.0), scalar("hi", 6.0), scalar("six", 6.0)], [("y", SHAPE), ("c", SHAPE)]
    else:
        nodes = [helper.make_node("HardSigmoid", ["x"], ["h"], alpha=0.2, beta=0.5), helper.make_node("Mul", ["x", "h"], ["y"])]
        inits, outputs = [], [("y", SHAPE)]
    model = make_model(nodes, [("x", SHAPE)], outputs, inits)
    converted = check_in_ncnn(model, tmp_path, low=-5, high=5)
    assert "HardSwish" not in ncnn_layer_types(converted)

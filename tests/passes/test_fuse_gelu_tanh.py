"""fuse_gelu_tanh (and fuse_gelu for the exporters' erf forms): GELU written out in ONNX ops becomes
one ncnn GELU where that computes the same numbers (real ncnn against onnxruntime, the interpreter
against real ncnn), and stays as it was where it would not."""
import math

import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

SHAPE = [1, 6, 16]


def gelu_tanh(cube="pow", half="last", inner_const=0.044715, swap=False, extra_output=False):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + c * x^3))) in the arrangement picked."""
    nodes, inits = [], []

    def const(v):
        inits.append((f"c{len(inits)}", np.array(v, np.float32)))
        return inits[-1][0]

    def op(kind, *inputs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out]))
        return out
    if cube == "pow":
        x3 = op("Pow", "x", const(3.0))
    else:
        x3 = op("Mul", op("Mul", "x", "x"), "x")
    term = op("Mul", const(inner_const), x3) if swap else op("Mul", x3, const(inner_const))
    inner = op("Mul", op("Add", "x", term), const(math.sqrt(2 / math.pi)))
    t = op("Tanh", inner)
    s = op("Add", const(1.0), t) if swap else op("Add", t, const(1.0))
    if half == "last":
        y = op("Mul", op("Mul", "x", s), const(0.5))
    elif half == "x first":
        y = op("Mul", op("Mul", "x", const(0.5)), s)
    else:
        y = op("Mul", "x", op("Mul", s, const(0.5)))
    nodes[-1].output[0] = "y"
    outputs = [("y", SHAPE)] + ([(t, SHAPE)] if extra_output else [])
    return make_model(nodes, [("x", SHAPE)], outputs, inits)


def gelu_erf(form):
    """The erf form as TorchScript (x / sqrt(2), 0.5 last) or dynamo (x * (1/sqrt(2)), 0.5 on x) write it."""
    if form == "torchscript":
        nodes = [helper.make_node("Div", ["x", "r2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
                 helper.make_node("Add", ["e", "one"], ["s"]), helper.make_node("Mul", ["x", "s"], ["p"]),
                 helper.make_node("Mul", ["p", "half"], ["y"])]
        inits = [("r2", np.float32(math.sqrt(2)))]
    else:
        nodes = [helper.make_node("Mul", ["x", "half"], ["h"]), helper.make_node("Mul", ["x", "r2"], ["a"]),
                 helper.make_node("Erf", ["a"], ["e"]), helper.make_node("Add", ["e", "one"], ["s"]),
                 helper.make_node("Mul", ["h", "s"], ["y"])]
        inits = [("r2", np.float32(1 / math.sqrt(2)))]
    return make_model(nodes, [("x", SHAPE)], [("y", SHAPE)],
                      inits + [("one", np.float32(1.0)), ("half", np.float32(0.5))])


FIRES = {"pow, 0.5 last": {}, "x*x*x, 0.5 on x, constants first": {"cube": "mul", "half": "x first", "swap": True},
         "0.5 on the sum": {"half": "sum"}}


@pytest.mark.parametrize("variant", FIRES.values(), ids=FIRES.keys())
def test_gelu_tanh_fuses(variant, tmp_path):
    model = gelu_tanh(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["gelu_tanh_fused"] == 1
    assert layers(converted) == ["Input", "GELU"]
    assert converted.graph.topological()[1].params[0] == 1         # fast_gelu: the tanh formula
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("variant", [{"inner_const": 0.05}, {"extra_output": True}],
                         ids=["another cubic coefficient", "tanh also an output"])
def test_gelu_tanh_near_misses_stay_unfused(variant, tmp_path):
    model = gelu_tanh(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["gelu_tanh_fused"] == 0
    assert "GELU" not in layers(converted)


@pytest.mark.parametrize("form", ["torchscript", "dynamo"])
def test_gelu_erf_forms_of_both_exporters_fuse(form, tmp_path):
    model = gelu_erf(form)
    converted = check_in_ncnn(model, tmp_path)
    assert layers(converted) == ["Input", "GELU"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)

"""Activations and unary math -> ncnn activation layers / UnaryOp, in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, random_inputs

ACTIVATIONS = {
    "Relu": ({}, "ReLU"),
    "LeakyRelu": ({"alpha": 0.2}, "ReLU"),
    "Sigmoid": ({}, "Sigmoid"),
    "Tanh": ({}, "TanH"),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4}, "HardSigmoid"),
    "HardSigmoid_default": ({}, "HardSigmoid"),
    "HardSwish": ({}, "HardSwish"),
    "Elu": ({"alpha": 0.5}, "ELU"),
    "Selu": ({}, "SELU"),
}
# op -> input range where it is defined and well conditioned
UNARY = {"Abs": None, "Neg": None, "Exp": None, "Log": (0.1, 4.0), "Sqrt": (0.0, 4.0),
         "Reciprocal": (0.5, 3.0), "Floor": None, "Ceil": None, "Sin": None, "Cos": None,
         "Tan": (-1.2, 1.2), "Asin": (-0.95, 0.95), "Acos": (-0.95, 0.95), "Atan": None}
SHAPES = [(1, 3, 4, 5), (1, 6, 7), (1, 9)]


def one_node(op, x_shape, inits=(), extra_inputs=(), opset=13, **attrs):
    node = helper.make_node(op, ["x", *extra_inputs], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)], inits, opset)


@pytest.mark.parametrize("x_shape", SHAPES, ids=["4d", "3d", "2d"])
@pytest.mark.parametrize("case", ACTIVATIONS)
def test_activation(case, x_shape, tmp_path):
    attrs, layer_type = ACTIVATIONS[case]
    op = case.split("_")[0]
    model = one_node(op, x_shape, opset=14 if op == "HardSwish" else 13, **attrs)
    feeds = random_inputs(model, low=-5, high=5)     # past the hard-sigmoid/swish knees
    converted = check_in_ncnn(model, tmp_path, feeds)
    assert layer_type in [n.op for n in converted.graph.nodes.values()]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op, tmp_path):
    low, high = UNARY[op] or (-3.0, 3.0)
    model = one_node(op, (1, 3, 4, 5))
    check_in_ncnn(model, tmp_path, random_inputs(model, low=low, high=high))


def test_round_is_half_to_even(tmp_path):
    model = one_node("Round", (1, 12))
    x = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.7, 0.49, 1.51, 4.5, -4.5]], np.float32)
    check_in_ncnn(model, tmp_path, {"x": x})


CLIPS = {
    "min_max": ([("lo", np.float32(-0.5)), ("hi", np.float32(1.5))], ["lo", "hi"]),
    "min_only": ([("lo", np.float32(0.0))], ["lo"]),
    "max_only": ([("hi", np.float32(6.0))], ["", "hi"]),
    "neither": ([], []),
}


@pytest.mark.parametrize("case", CLIPS)
def test_clip_inputs(case, tmp_path):
    inits, names = CLIPS[case]
    model = one_node("Clip", (1, 3, 4, 5), inits, names)
    check_in_ncnn(model, tmp_path, random_inputs(model, low=-8, high=8))


def test_clip_opset6_attributes(tmp_path):
    model = one_node("Clip", (1, 3, 4, 5), opset=6, min=-1.0, max=0.5)
    check_in_ncnn(model, tmp_path)


@pytest.mark.parametrize("bounds", [("lo",), ("", "hi"), ("lo", "hi"), ("hi", "lo")], ids=str)
def test_clip_with_bounds_fed_at_run_time(bounds, tmp_path):
    """Bounds that are inputs become BinaryOp max/min; ("hi", "lo") puts min above max, where ONNX
    (and onnxruntime) give max."""
    nodes = [helper.make_node("Clip", ["x", *bounds], ["y"])]
    names = [b for b in bounds if b]
    model = make_model(nodes, [("x", (1, 3, 4, 5)), *[(b, []) for b in names]], [("y", None)])
    feeds = {"x": np.random.default_rng(0).uniform(-4, 4, (1, 3, 4, 5)).astype(np.float32),
             **{b: np.array(v, np.float32) for b, v in (("lo", -1.0), ("hi", 2.0)) if b in names}}
    converted = check_in_ncnn(model, tmp_path, feeds)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_clip_at_a_floor_computed_from_the_input(tmp_path):
    """openWakeWord's mel spectrogram: Clip(x, ReduceMax(x) - 80)."""
    nodes = [helper.make_node("ReduceMax", ["x"], ["peak"], keepdims=0),
             helper.make_node("Sub", ["peak", "range"], ["floor"]),
             helper.make_node("Clip", ["x", "floor"], ["y"])]
    model = make_model(nodes, [("x", (1, 1, 6, 8))], [("y", None)], [("range", np.float32(80.0))])
    check_in_ncnn(model, tmp_path, random_inputs(model, low=-100, high=10))

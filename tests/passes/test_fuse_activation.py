"""fuse_activation: conv/fc + activation become one layer where they may, and numbers stay right
(real ncnn against onnxruntime, and the interpreter against real ncnn)."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(5)

ACTIVATIONS = {            # ONNX node (input "c", output "y") -> fused activation_type
    "Relu": (lambda: helper.make_node("Relu", ["c"], ["y"]), 1),
    "LeakyRelu": (lambda: helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.15), 2),
    "Clip": (lambda: helper.make_node("Clip", ["c", "lo", "hi"], ["y"]), 3),
    "Sigmoid": (lambda: helper.make_node("Sigmoid", ["c"], ["y"]), 4),
    "HardSwish": (lambda: helper.make_node("HardSwish", ["c"], ["y"]), 6),
}
CLIP_BOUNDS = [("lo", np.float32(-0.5)), ("hi", np.float32(0.8))]


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def conv_model(activation: str, group: int = 1, extra_nodes=(), outputs=(("y", None),)):
    conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], group=group)
    inits = [("W", rand(4, 4 // group, 3, 3)), ("B", rand(4))] + CLIP_BOUNDS
    return make_model([conv, ACTIVATIONS[activation][0](), *extra_nodes], [("x", (1, 4, 7, 6))],
                      list(outputs), inits, opset=14)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("group", [1, 4])
def test_conv_activation_fuses(activation, group, tmp_path):
    model = conv_model(activation, group)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["activations_fused"] == 1
    conv = [n for n in converted.graph.topological() if n.op.startswith("Convolution")]
    assert layers(converted) == ["Input", conv[0].op] and conv[0].params[9] == ACTIVATIONS[activation][1]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("activation", ["Relu", "Clip"])
def test_gemm_activation_fuses(activation, tmp_path):
    gemm = helper.make_node("Gemm", ["a", "Wg", "Bg"], ["c"], transB=1)
    # one row: an InnerProduct (rows of a matrix become a Gemm, which carries no activation)
    model = make_model([gemm, ACTIVATIONS[activation][0]()], [("a", (1, 5))], [("y", None)],
                       [("Wg", rand(3, 5)), ("Bg", rand(3))] + CLIP_BOUNDS)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["activations_fused"] == 1 and "ReLU" not in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_conv_output_read_twice_is_not_fused(tmp_path):
    model = conv_model("Relu", extra_nodes=[helper.make_node("Add", ["c", "y"], ["z"])], outputs=[("z", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["activations_fused"] == 0 and "ReLU" in layers(converted)


def test_conv_output_that_is_a_graph_output_is_not_fused(tmp_path):
    model = conv_model("Sigmoid", outputs=[("y", None), ("c", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["activations_fused"] == 0 and "Sigmoid" in layers(converted)


def test_second_activation_stays_a_layer(tmp_path):
    model = conv_model("Relu", extra_nodes=[helper.make_node("Sigmoid", ["y"], ["z"])], outputs=[("z", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["activations_fused"] == 1 and layers(converted)[-1] == "Sigmoid"

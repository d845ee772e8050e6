"""fold_scale_into_matmul: a per-column constant scale after MatMul (+ bias) is folded into W and b,
checked against onnxruntime in real ncnn (and the interpreter against real ncnn); a scalar scale, a
scale that broadcasts the product, a projection read elsewhere and a scaled graph output are left
alone."""
import numpy as np
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(5)
K, N = 12, 8


def scaled_linear(g, bias=True, x_shape=(1, 7, K), extra_reader=False):
    nodes = [helper.make_node("MatMul", ["x", "W"], ["p" if bias else "a"])]
    inits = [("W", RNG.uniform(-1, 1, (K, N)).astype(np.float32)), ("g", np.asarray(g, np.float32))]
    if bias:
        nodes.append(helper.make_node("Add", ["p", "B"], ["a"]))
        inits.append(("B", RNG.uniform(-1, 1, N).astype(np.float32)))
    nodes += [helper.make_node("Mul", ["a", "g"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    outputs = [("y", None)]
    if extra_reader:
        nodes.append(helper.make_node("Relu", ["a"], ["z"]))
        outputs.append(("z", None))
    return make_model(nodes, [("x", list(x_shape))], outputs, inits)


def scaled_output():
    nodes = [helper.make_node("MatMul", ["x", "W"], ["a"]), helper.make_node("Mul", ["a", "g"], ["y"])]
    inits = [("W", RNG.uniform(-1, 1, (K, N)).astype(np.float32)), ("g", RNG.uniform(0.1, 2, N).astype(np.float32))]
    return make_model(nodes, [("x", [1, 7, K])], [("y", None)], inits)


def test_layer_scale_folds(tmp_path):
    model = scaled_linear(RNG.uniform(0.1, 2, N))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["scales_folded"] == 1 and layers(converted) == ["Input", "Gemm", "ReLU"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_without_bias_and_with_leading_ones(tmp_path):
    converted = check_in_ncnn(scaled_linear(RNG.uniform(-2, 2, (1, 1, N)), bias=False), tmp_path)
    assert converted.stats["scales_folded"] == 1 and "BinaryOp" not in layers(converted)


def test_left_alone(tmp_path):
    for i, model in enumerate([scaled_linear(0.5), scaled_linear(RNG.uniform(0.1, 2, (3, 1, N)), x_shape=(1, 1, K)),
                               scaled_linear(RNG.uniform(0.1, 2, N), extra_reader=True), scaled_output()]):
        (tmp_path / str(i)).mkdir()
        converted = check_in_ncnn(model, tmp_path / str(i))
        assert converted.stats["scales_folded"] == 0

"""convert_pointwise_conv_innerproduct: 1x1 Convolutions over a globally pooled pixel (a squeeze-excitation
block, a classifier head) become InnerProducts over the pooled vector, checked against onnxruntime in
the real ncnn and the interpreter; a pixel from a keepdims ReduceMean, a wider input or a padded
Convolution stays a Convolution."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

C, R, HW = 8, 4, 5
RNG = np.random.default_rng(3)


def squeeze_excite(pool="GlobalAveragePool", act="Relu", pads=(0, 0, 0, 0), head=False, pooled_hw=1):
    """y = x * Sigmoid(Conv(act(Conv(pool(x))))), or with `head` y = Gemm(Flatten(act(Conv(pool(x)))))."""
    rand = lambda *shape: RNG.uniform(-1, 1, shape).astype(np.float32)     # noqa: E731
    inits = [("w1", rand(R, C, 1, 1)), ("b1", rand(R)), ("w2", rand(C, R, 1, 1)), ("b2", rand(C))]
    if pool == "GlobalAveragePool":
        nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"])]
    elif pool == "ReduceMean":
        nodes = [helper.make_node("ReduceMean", ["x"], ["p"], axes=[2, 3], keepdims=1)]
    else:       # a pooled map wider than a pixel
        nodes = [helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[HW - pooled_hw + 1] * 2)]
    nodes += [helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], pads=list(pads)),
              helper.make_node(act, ["c1"], ["a1"])]
    if head:
        side = pooled_hw + pads[0] + pads[2]
        inits.append(("wg", RNG.uniform(-1, 1, (3, R * side * side)).astype(np.float32)))
        nodes += [helper.make_node("Flatten", ["a1"], ["f"]), helper.make_node("Gemm", ["f", "wg"], ["y"], transB=1)]
    else:
        nodes += [helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"]), helper.make_node("Sigmoid", ["c2"], ["s"]),
                  helper.make_node("Mul", ["x", "s"], ["y"])]
    return make_model(nodes, [("x", [1, C, HW, HW])], [("y", None)], inits)


FIRES = {   # variant -> Convolutions turned
    "squeeze-excitation": ({}, 2),
    "hard-sigmoid between": ({"act": "HardSigmoid"}, 2),
    "classifier head": ({"head": True}, 1),
}


@pytest.mark.parametrize("variant, turned", FIRES.values(), ids=FIRES.keys())
def test_pointwise_convs_on_a_pixel_become_innerproducts(variant, turned, tmp_path):
    model = squeeze_excite(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["pointwise_conv_as_innerproduct"] == turned
    types = layers(converted)
    assert "Convolution" not in types and types.count("InnerProduct") == turned + int(variant.get("head", False))
    assert types.count("Reshape") == (0 if variant.get("head") else 1), types     # the pixel for the Mul
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "pixel from a keepdims ReduceMean": {"pool": "ReduceMean"},
    "a 2x2 map": {"pool": "AveragePool", "pooled_hw": 2, "head": True},
    "padded 1x1 Convolution": {"pads": (1, 1, 1, 1), "head": True},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_other_convs_stay(variant, tmp_path):
    model = squeeze_excite(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["pointwise_conv_as_innerproduct"] == 0
    assert "Convolution" in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)

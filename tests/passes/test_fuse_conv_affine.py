"""fuse_conv_affine: a per-channel constant Mul / Add after a Conv (DETR's frozen batch norm, PP-LCNet's
learnable affine) folds into the Convolution where that computes the same numbers (real ncnn against
onnxruntime, the interpreter against real ncnn), and stays where it would not."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(31)
C = 4


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def conv_affine(mul_shape=(1, C, 1, 1), add_shape=(1, C, 1, 1), bias=True, conv_output=False):
    nodes = [helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), ["c"], pads=[1, 1, 1, 1])]
    inits = [("W", rand(C, 3, 3, 3))] + ([("B", rand(C))] if bias else [])
    y = "c"
    if mul_shape is not None:
        nodes.append(helper.make_node("Mul", [y, "s"], ["m"]))
        inits.append(("s", rand(*mul_shape)))
        y = "m"
    if add_shape is not None:
        nodes.append(helper.make_node("Add", ["t", y], ["a"]))
        inits.append(("t", rand(*add_shape)))
        y = "a"
    nodes.append(helper.make_node("Relu", [y], ["y"]))
    outputs = [("y", None)] + ([("c", None)] if conv_output else [])
    return make_model(nodes, [("x", (1, 3, 6, 6))], outputs, inits)


FIRES = {"frozen batch norm": ({}, 2), "scalar scale, no bias": ({"mul_shape": (), "add_shape": None, "bias": False}, 1),
         "shift as (C, 1, 1)": ({"mul_shape": None, "add_shape": (C, 1, 1)}, 1)}


@pytest.mark.parametrize("variant, count", FIRES.values(), ids=FIRES.keys())
def test_per_channel_affine_folds_into_the_conv(variant, count, tmp_path):
    model = conv_affine(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["conv_affine_fused"] == count
    assert layers(converted) == ["Input", "Convolution"]            # the ReLU fuses too
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("variant", [{"mul_shape": (1, 1, 1, 6), "add_shape": None},
                                     {"mul_shape": (1, C, 6, 1), "add_shape": None},
                                     {"conv_output": True}],
                         ids=["varies along width", "varies along height", "conv output read elsewhere"])
def test_near_misses_stay_binaryops(variant, tmp_path):
    model = conv_affine(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["conv_affine_fused"] == 0 and "BinaryOp" in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)

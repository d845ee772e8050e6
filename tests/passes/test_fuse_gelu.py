"""fuse_gelu: the erf GELU arrangements become one ncnn GELU (REAL ncnn runtime), plus the transformer model."""
import math

import numpy as np
import onnx
import pytest
from onnx import helper

from onnx_cases import MODELS, check_in_ncnn, make_model

SQRT2 = np.float32(math.sqrt(2.0))


def gelu_model(scale="div", half="last", add_order=("e", "one"), mul_order=("x", "t"), extra_user=None):
    """x * 0.5 * (1 + erf(x / sqrt2)) spelled one of the ways exporters do."""
    nodes = []
    if scale == "div":
        nodes.append(helper.make_node("Div", ["x", "sqrt2"], ["s"]))
    else:
        nodes.append(helper.make_node("Mul", ["inv_sqrt2", "x"], ["s"]))
    nodes.append(helper.make_node("Erf", ["s"], ["e"]))
    nodes.append(helper.make_node("Add", list(add_order), ["t"]))
    pick = lambda a, b: [a, b] if mul_order == ("x", "t") else [b, a]  # noqa: E731
    if half == "last":        # (x * t) * 0.5
        nodes += [helper.make_node("Mul", pick("x", "t"), ["xt"]), helper.make_node("Mul", ["xt", "half"], ["y"])]
    elif half == "first":     # (x * 0.5) * t
        nodes += [helper.make_node("Mul", ["x", "half"], ["hx"]), helper.make_node("Mul", pick("hx", "t"), ["y"])]
    else:                     # x * (t * 0.5)
        nodes += [helper.make_node("Mul", ["half", "t"], ["ht"]), helper.make_node("Mul", pick("x", "ht"), ["y"])]
    outputs = [("y", None)]
    if extra_user:
        nodes.append(helper.make_node("Add", [extra_user, "x"], ["z"]))
        outputs.append(("z", None))
    inits = [("sqrt2", SQRT2), ("inv_sqrt2", np.float32(1 / math.sqrt(2.0))), ("one", np.float32(1.0)),
             ("half", np.float32(0.5))]
    return make_model(nodes, [("x", [1, 8, 16])], outputs, inits)


def layer_types(converted):
    return sorted(n.op for n in converted.graph.nodes.values() if n.op not in ("Input", "MemoryData"))


@pytest.mark.parametrize("scale", ["div", "mul"])
@pytest.mark.parametrize("half", ["last", "first", "sum"])
@pytest.mark.parametrize("add_order", [("e", "one"), ("one", "e")], ids=["erf+1", "1+erf"])
@pytest.mark.parametrize("mul_order", [("x", "t"), ("t", "x")], ids=["x*t", "t*x"])
def test_fused_into_one_gelu(scale, half, add_order, mul_order, tmp_path):
    converted = check_in_ncnn(gelu_model(scale, half, add_order, mul_order), tmp_path, low=-4, high=4)
    assert layer_types(converted) == ["GELU"]
    assert converted.stats["gelu_fused"] == 1


@pytest.mark.parametrize("extra_user", ["e", "t", "s"])
def test_not_fused_when_an_intermediate_has_another_reader(extra_user, tmp_path):
    converted = check_in_ncnn(gelu_model(extra_user=extra_user), tmp_path, low=-4, high=4)
    assert converted.stats["gelu_fused"] == 0
    assert "Erf" in layer_types(converted)


def test_not_fused_with_wrong_constant(tmp_path):
    model = gelu_model()
    for init in model.graph.initializer:
        if init.name == "half":
            init.CopyFrom(onnx.numpy_helper.from_array(np.float32(0.25), "half"))
    converted = check_in_ncnn(model, tmp_path, low=-4, high=4)
    assert converted.stats["gelu_fused"] == 0 and "Erf" in layer_types(converted)


def test_transformer_small_end_to_end(tmp_path):
    model = onnx.load(MODELS / "transformer_small.onnx")
    converted = check_in_ncnn(model, tmp_path)
    types = layer_types(converted)
    assert converted.stats["gelu_fused"] == 1 and "Erf" not in types
    # one attention layer: MultiHeadAttention, or (expand_small_attention) SDPA between two Gemms of its own
    sdpa = types.count("SDPA")
    assert types.count("MultiHeadAttention") + sdpa == 1
    assert types.count("LayerNorm") == 2 and types.count("Gemm") == 2 + 2 * sdpa

"""apply_int8: an int8 layer whose input pair float layers read as well, or whose input an average
pooling makes (full of ties), takes the pair's output (values on the quantizer's lattice), so ncnn's own
rounding never meets those ties; elsewhere, where only int8 layers read the pair, they take the float
tensor before it and the pair's layers go."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import to_ncnn


def _pooled_model(float_reader: bool):
    """x -> Q/DQ -> AveragePool 2x2 -> Q/DQ (the same scale: a mean of four steps lands on quarter
    steps, half of them ties) -> int8 Conv -> y, and with `float_reader` also -> Sigmoid -> s. The
    scale is a power of two, so the emulated pair's x * (1/s) is x / s exactly."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in [
        ("s", 0.0625, np.float32), ("z", 0, np.int8), ("w", rng.integers(-127, 128, (6, 4, 3, 3)), np.int8),
        ("ws", rng.uniform(0.004, 0.01, 6), np.float32), ("wz", np.zeros(6), np.int8), ("b", rng.normal(0, 1, 6), np.float32)]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("AveragePool", ["xd"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"]),
             helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["pd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["pd", "wd", "b"], ["y"], pads=[1, 1, 1, 1])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 5, 6])]
    if float_reader:
        nodes.append(helper.make_node("Sigmoid", ["pd"], ["sig"]))
        outputs.append(helper.make_tensor_value_info("sig", TensorProto.FLOAT, [1, 4, 5, 6]))
    graph = helper.make_graph(nodes, "pooled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 12])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("float_reader", [True, False])
def test_int8_conv_after_a_pool_reads_the_pairs_lattice(tmp_path, float_reader):
    model = _pooled_model(float_reader)
    x = (np.random.default_rng(8).integers(-120, 120, (1, 4, 10, 12)) * 0.0625).astype(np.float32)
    want = _spec(model, x)
    converted = convert(model)
    assert converted.stats["int8_layers"] == 1
    conv = next(n for n in converted.graph if n.op == "Convolution")
    assert converted.graph.producer(conv.inputs[0]).op in ("BinaryOp", "Split")       # the pair's output
    got = _real_ncnn(converted, x, tmp_path).reshape(want.shape)
    # the conv quantizes lattice values: the spec's integers, so the spec's result up to float rounding
    assert np.abs(got - want).max() <= np.abs(want).max() * 2.0 ** -20


def test_int8_conv_after_a_conv_reads_the_float_tensor(tmp_path):
    """No float reader, no averaging: the int8 layer quantizes the float tensor itself and the pair's
    layers go (ties are as rare as for any float value)."""
    model = _pooled_model(False)
    pool = next(node for node in model.graph.node if node.op_type == "AveragePool")
    pool.op_type = "MaxPool"
    converted = convert(model)
    conv = next(n for n in converted.graph if n.op == "Convolution")
    assert converted.stats["int8_layers"] == 1 and converted.graph.producer(conv.inputs[0]).op == "Pooling"
    assert not any(n.origin in ("QuantizeLinear_3", "DequantizeLinear_4") for n in converted.graph)


def _spec(model, x):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options).run(["y"], {"x": x})[0]


def _real_ncnn(converted, x, tmp_path):
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    (e_in,), e_out = converted.io()["inputs"], converted.io()["outputs"][0]
    return run_ncnn(param, bin_, {e_in["ncnn"]: to_ncnn(x, e_in)}, [e_out["ncnn"]])[e_out["ncnn"]]


def _pointwise_pair_model():
    """x (16 channels) -> Q/DQ -> 1x1 Conv 16 -> 48 -> Q/DQ -> 1x1 Conv 48 -> 8 -> y: 16 and 48 products per
    output."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in [
        ("s", 0.02, np.float32), ("z", 0, np.int8), ("s2", 0.05, np.float32),
        ("w1", rng.integers(-127, 128, (48, 16, 1, 1)), np.int8), ("w1s", rng.uniform(0.002, 0.004, 48), np.float32),
        ("w1z", np.zeros(48), np.int8), ("w2", rng.integers(-127, 128, (8, 48, 1, 1)), np.int8),
        ("w2s", rng.uniform(0.002, 0.004, 8), np.float32), ("w2z", np.zeros(8), np.int8)]]

    def pair(x, out, scale):
        return [helper.make_node("QuantizeLinear", [x, scale, "z"], [out + "q"]),
                helper.make_node("DequantizeLinear", [out + "q", scale, "z"], [out])]
    nodes = [*pair("x", "xd", "s"),
             helper.make_node("DequantizeLinear", ["w1", "w1s", "w1z"], ["w1d"], axis=0),
             helper.make_node("Conv", ["xd", "w1d"], ["c"], name="expand"),
             *pair("c", "cd", "s2"),
             helper.make_node("DequantizeLinear", ["w2", "w2s", "w2z"], ["w2d"], axis=0),
             helper.make_node("Conv", ["cd", "w2d"], ["y"], name="project")]
    graph = helper.make_graph(nodes, "pointwise",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_fast_mode_keeps_short_sums_float():
    """Fast mode: a Convolution summing at most 32 products per output (the 1x1 over 16 channels) runs float,
    where ncnn's x86 int8 one is slower (scripts/int8_layer_profile.py), with its reason; the one over 48
    stays int8; exact mode runs both int8."""
    model = _pointwise_pair_model()
    fast, exact = convert(model, int8="fast"), convert(model, int8="exact")
    int8 = lambda m: {n.origin for n in m.graph if n.op == "Convolution" and n.params.get(8)}  # noqa: E731
    assert int8(exact) == {"expand", "project"} and int8(fast) == {"project"}
    assert fast.stats["int8_fallbacks"]["expand"].startswith("fast mode:")
    assert "at most 32" in fast.stats["int8_fallbacks"]["expand"]
    assert "expand" not in exact.stats["int8_fallbacks"]

"""drop_activation_qdq (fast int8): the activation Q/DQ pairs go, int8 layers quantize the float tensor themselves.

A hand-built QDQ model: x -> Q/DQ -> int8 Conv -> Q/DQ -> Sigmoid -> Q/DQ -> Add(with the Conv's pair) ->
Q/DQ -> y. In fast mode every pair on a computed tensor but the graph output's is dropped (listed in
int8_dropped), the Conv runs int8 reading x, and the file computes the float model (pairs removed,
onnxruntime) up to the Conv's own input quantization: within onnxruntime's int8-vs-float distance. In
exact mode nothing is dropped.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from converter.verification.int8_fast import rel_rms, strip_activation_pairs
from onnx_cases import to_ncnn


def _model():
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in [
        ("s", 0.02, np.float32), ("z", 0, np.int8), ("w", rng.integers(-127, 128, (8, 8, 3, 3)), np.int8),
        ("ws", rng.uniform(0.002, 0.004, 8), np.float32), ("wz", np.zeros(8), np.int8),
        ("b", rng.normal(0, 0.1, 8), np.float32), ("s2", 0.01, np.float32)]]

    def pair(x, out, scale="s"):
        return [helper.make_node("QuantizeLinear", [x, scale, "z"], [out + "q"]),
                helper.make_node("DequantizeLinear", [out + "q", scale, "z"], [out])]
    nodes = [*pair("x", "xd"),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
             *pair("c", "cd"),
             helper.make_node("Sigmoid", ["cd"], ["g"]),
             *pair("g", "gd", "s2"),
             helper.make_node("Add", ["cd", "gd"], ["a"]),
             *pair("a", "y")]
    graph = helper.make_graph(nodes, "fast", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 10, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_fast_drops_pairs_keeps_int8_conv(tmp_path):
    model = _model()
    fast, exact = convert(model, int8="fast"), convert(model, int8="exact")
    assert fast.stats["int8_mode"] == "fast" and fast.stats["int8_layers"] == exact.stats["int8_layers"] == 1
    # x's pair (read by the int8 Conv), the Conv's and the Sigmoid's, not y's: a graph output
    assert sorted(fast.stats["int8_dropped"].values()) == ["c", "g", "x"]    # the tensors they quantized
    assert "int8_dropped" not in exact.stats
    conv = next(n for n in fast.graph.nodes.values() if n.op == "Convolution")
    assert conv.params[8] == 1 and conv.inputs[0] == "x"       # quantizes the float input itself
    rounds = lambda m: sum(1 for n in m.graph.nodes.values() if n.op == "UnaryOp" and n.params.get(0) == 18)  # noqa: E731
    assert rounds(fast) == 1 and rounds(exact) >= 3           # only y's own pair is left emulated
    x = np.random.default_rng(5).normal(0, 1, (1, 8, 10, 12)).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    int8 = ort.InferenceSession(model.SerializeToString(), options).run(None, {"x": x})[0]
    floats = ort.InferenceSession(strip_activation_pairs(model).SerializeToString(), options).run(None, {"x": x})[0]
    param, bin_ = tmp_path / "f.param", tmp_path / "f.bin"
    fast.save(param, bin_)
    (e_in,), (e_out,) = fast.io()["inputs"], fast.io()["outputs"]
    feeds = {e_in["ncnn"]: to_ncnn(x, e_in)}
    for got in (run_ncnn(param, bin_, feeds, [e_out["ncnn"]])[e_out["ncnn"]], fast.run(feeds, layout="ncnn")[e_out["ncnn"]]):
        assert rel_rms(got.reshape(floats.shape), floats) <= rel_rms(int8, floats)


def test_strip_activation_pairs_keeps_weights_and_outputs():
    stripped = strip_activation_pairs(_model())
    ops = [n.op_type for n in stripped.graph.node]
    assert ops.count("QuantizeLinear") == 0                 # all activation pairs gone (y's becomes Identity)
    assert ops.count("DequantizeLinear") == 1               # the weight's stays
    assert "Identity" in ops and stripped.graph.output[0].name == "y"

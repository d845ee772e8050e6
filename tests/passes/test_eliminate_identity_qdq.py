"""A Q/DQ pair after Relu / MaxPool / Reshape / Clip to lattice bounds with its input's scale gives back its input: its float
readers skip it, the int8 Conv planned on it still absorbs it, and the real ncnn computes the same
bits as without the pass."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.api import NcnnModel
from converter.ncnn_side.runtime import run_ncnn
from converter.onnx_side.loader import load_onnx
from passes import run_pipeline
from passes.eliminate_identity_qdq import eliminate_identity_qdq
from passes.hoist_relu_over_qdq import hoist_relu_over_qdq
from passes.plan_int8 import plan_int8
from quantized_cases import qdq_moves_model

X = np.concatenate([np.random.default_rng(7).normal(0, 2, (1, 2, 6, 6)),
                    np.random.default_rng(8).integers(-160, 160, (1, 2, 6, 6)) * 0.05], axis=1).astype(np.float32)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """[(model, real-ncnn outputs by ONNX name)]: all passes, without eliminate_identity_qdq,
    without hoist_relu_over_qdq (which lets the Relu's pair repeat the Conv's), without both."""
    tmp = tmp_path_factory.mktemp("identity_qdq")
    found = []
    for skip in (set(), {eliminate_identity_qdq}, {hoist_relu_over_qdq}, {hoist_relu_over_qdq, eliminate_identity_qdq}):
        graph = load_onnx(qdq_moves_model())
        model = NcnnModel(graph, run_pipeline(graph, skip=skip))
        param, bin_ = tmp / f"m{len(found)}.param", tmp / f"m{len(found)}.bin"
        model.save(param, bin_)
        outs = {e["ncnn"]: e["onnx"] for e in model.io()["outputs"]}
        real = run_ncnn(param, bin_, {"x": X[0]}, list(outs))
        found.append((model, {outs[k]: v for k, v in real.items()}))
    return found


def test_pairs_skipped_and_the_same_bits(converted):
    (model, got), (plain, want) = converted[2:]
    assert model.stats["identity_qdq_bypassed"] == 4
    assert model.stats["int8_layers"] == plain.stats["int8_layers"] == 2
    # mul, round, clip, mul each; the Clip layer's pair has no clip of its own (narrow_quantize_clips)
    assert len(model.graph.nodes) == len(plain.graph.nodes) - 4 * 4 + 1
    for name in ("y", "y2"):
        assert got[name].tobytes() == want[name].tobytes(), name


def test_interpreter_the_same_bits(converted):
    """(its Sigmoid is not ncnn's polynomial exp, so it is compared with itself without the pass)"""
    (model, _), (plain, _) = converted[2:]
    ours, before = model.run({"x": X}), plain.run({"x": X})
    for name in ("y", "y2"):
        assert ours[name].tobytes() == before[name].tobytes(), name


def test_relu_hoisted_into_the_conv_and_its_pair_absorbed(converted):
    """The Relu runs fused in the int8 Conv, its pair (the Conv's scale) repeats the Conv's: MaxPool
    reads the Conv's pair, the second int8 Conv quantizes the Conv's output itself."""
    (model, got), _, (no_hoist, want) = converted[:3]
    assert model.stats["relus_hoisted"] == 1
    assert not any(n.op == "ReLU" for n in model.graph)
    conv = next(n for n in model.graph if n.op == "Convolution" and n.outputs[0] != "y2")
    assert conv.params[9] == 1           # read by the pair and the second Conv: the clip cannot join it
    assert sum(n.op == "ReLU" for n in no_hoist.graph) == 1
    second = next(n for n in model.graph if n.op == "Convolution" and n.outputs[0] == "y2")
    assert model.graph.producer(second.inputs[0]) is conv or model.graph.producer(second.inputs[0]).op == "Split"
    # exact except where the Conv's output, scaled, is a tie (k + 0.5): none in these inputs
    for name in ("y", "y2"):
        assert got[name].tobytes() == want[name].tobytes(), name


def _pair_after(op: str, inputs: list[str], inits: dict, **attrs):
    """x -> Q/DQ (scale 0.1) -> op -> Q/DQ (scale 0.1) -> y: the ONNX graph after plan_int8."""
    consts = {"s": np.float32(0.1), "z": np.int8(0), **inits}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node(op, ["xd", *inputs], ["t"], **attrs),
             helper.make_node("QuantizeLinear", ["t", "s", "z"], ["tq"]),
             helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["td"]),
             helper.make_node("Identity", ["td"], ["y"])]
    graph = helper.make_graph(nodes, "pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


@pytest.mark.parametrize("op, inputs, inits, attrs, identity", [
    ("Clip", ["lo", "hi"], {"lo": np.float32(0), "hi": np.float32(30) * np.float32(0.1)}, {}, True),
    ("Clip", ["lo", "hi"], {"lo": np.float32(-100), "hi": np.float32(100)}, {}, True),      # beyond the range
    ("Clip", ["lo", "hi"], {"lo": np.float32(0), "hi": np.float32(2.95)}, {}, False),      # between two steps
    ("Resize", ["", "scales"], {"scales": np.float32([1, 1, 2, 2])}, {"mode": "nearest"}, True),
    ("Resize", ["", "scales"], {"scales": np.float32([1, 1, 2, 2])}, {"mode": "linear"}, False),
    ("Sigmoid", [], {}, {}, False),
])
def test_which_ops_keep_the_lattice(op, inputs, inits, attrs, identity):
    graph = _pair_after(op, inputs, inits, **attrs)
    plan_int8(graph)
    assert eliminate_identity_qdq(graph)["identity_qdq_bypassed"] == int(identity)
    assert next(n for n in graph if n.op == "Identity").inputs == ["t" if identity else "td"]

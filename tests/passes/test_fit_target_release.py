"""passes/fit_target_release.py: the forms an older --target-ncnn lacks, written in ones it has.
Each case checks the rewrite fired (the newer layer or op code is gone), the interpreter still
matches onnxruntime, and the newest target keeps the newer form. tests/releases runs such files in
the real releases."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS


def _model(nodes, initializers=()) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _slice_reversed() -> onnx.ModelProto:
    consts = [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in
              [("s", -1), ("e", -(2 ** 62)), ("a", 1), ("st", -1)]]
    return _model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], consts)


CASES = {
    "softplus": (_model([helper.make_node("Softplus", ["x"], ["y"])]),
                 lambda n: n.op == "BinaryOp" and n.params.get(0) == BINARY_OPS["logaddexp"]),
    "sign": (_model([helper.make_node("Sign", ["x"], ["y"])]),
             lambda n: n.op == "UnaryOp" and n.params.get(0) == UNARY_OPS["sign"]),
    "flip": (_slice_reversed(), lambda n: n.op == "Flip"),
}


@pytest.mark.parametrize("case", CASES)
def test_older_form_fires_and_matches_onnxruntime(case):
    model, newer = CASES[case]
    x = np.random.default_rng(0).standard_normal((1, 6, 5)).astype(np.float32) * 30
    x[0, 0, :3] = [0.0, 1e-40, -1e-40]          # sign of zero and of denormals
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    newest = convert(model)
    assert any(newer(n) for n in newest.graph.nodes.values())
    old = convert(model, target_ncnn=20240410)
    assert not any(newer(n) for n in old.graph.nodes.values())
    assert old.stats["ncnn_min_version"] == 20240410
    got = old.run({"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

"""--input-value: a model that branches on an input converts once that input is fixed."""
import json

import onnx
from test_convert_cli import assert_bad_input, run_cli

from tests.passes.test_inline_if import rate_model


def test_convert_and_verify_with_a_fixed_input(tmp_path):
    model = tmp_path / "rate.onnx"
    onnx.save(rate_model(), str(model))
    result = run_cli("convert", model, "-o", tmp_path, "--input-value", "sr=16000", "--json")
    assert result.returncode == 0, result.stderr
    assert [e["onnx"] for e in json.loads(result.stdout)["inputs"]] == ["x"]
    result = run_cli("verify", model, "--input-value", "sr=8000", "--backend", "both")
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_it_an_if_with_unequal_branches_is_refused_in_one_line(tmp_path):
    """(An If on a run-time value whose branches agree in shape converts: passes/inline_if.py selects.)"""
    proto = rate_model()
    else_branch = next(a.g for a in proto.graph.node[1].attribute if a.name == "else_branch")
    else_branch.node[0].CopyFrom(onnx.helper.make_node("ReduceMax", ["x"], ["else_y"], keepdims=1, axes=[2]))
    else_branch.output[0].type.tensor_type.shape.dim[2].dim_value = 1
    model = tmp_path / "rate.onnx"
    onnx.save(proto, str(model))
    assert_bad_input(run_cli("convert", model, "-o", tmp_path), "If node 'pick'", "--input-value sr=VALUE")
    assert_bad_input(run_cli("convert", model, "--input-value", "sr"), "--input-value expects NAME=V1,V2")

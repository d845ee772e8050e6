"""Malformed models the fuzz found: each is refused with exit 2 and one line naming what is wrong."""
import numpy as np
import onnx
import pytest
from onnx import helper

from converter.cli import main
from onnx_cases import make_model

W = np.ones((4, 3, 3, 3), np.float32)


def transpose(perm):
    return make_model([helper.make_node("Transpose", ["x"], ["y"], perm=perm)], [("x", [1, 2, 3, 4])],
                      [("y", [1, 2, 3, 4])])


def conv(**attrs):
    return make_model([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], [("x", [1, 3, 8, 8])],
                      [("y", None)], [("w", W)])


def batchnorm_wrong_channels():
    stats = [("s", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32)), ("m", np.zeros(3, np.float32)),
             ("v", np.ones(4, np.float32)), ("w", W)]
    return make_model([helper.make_node("Conv", ["x", "w"], ["c"]),
                       helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])],
                      [("x", [1, 3, 8, 8])], [("y", [1, 4, 6, 6])], stats)


def div_declared_wrong():
    """Shape inference cannot reconcile the operands: the declared output must not be trusted."""
    return make_model([helper.make_node("Div", ["a", "b"], ["y"])], [("a", [1, "w", 8]), ("b", [1, 4, 6, 4])],
                      [("y", [1, 8, 8])])


def huge_input():
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 3, 10**12])], [("y", None)])


def maxpool_zero_kernel():
    return make_model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[0, 2])],
                      [("x", [1, 3, 8, 8])], [("y", [1, 3, 8, 4])])


def gather_from_a_scalar():
    """Invalid (Gather needs data of rank >= 1), but onnxruntime loads it, so it reaches the converter."""
    return make_model([helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
                       helper.make_node("Gather", ["top", "i"], ["y"])],
                      [("x", [1, 3, 8, 8])], [("y", [])], [("i", np.array(1.5, np.float32))])


CASES = {
    "perm not a permutation": (transpose([0, 2, 1, 2]), "not a permutation"),
    "perm out of range": (transpose([0, 2, 3, 10**12]), "not a permutation"),
    "conv group 1e12": (conv(group=10**12), "group"),
    "batchnorm channel counts": (batchnorm_wrong_channels(), "values for 4 channels"),
    "div operands vs declared output": (div_declared_wrong(), "do not broadcast"),
    "dim of 1e12": (huge_input(), "GiB"),
    "maxpool kernel 0": (maxpool_zero_kernel(), "positive"),
    "gather from a scalar": (gather_from_a_scalar(), "is a scalar"),
}


@pytest.mark.parametrize("command", ["convert", "verify"])
@pytest.mark.parametrize("name", CASES)
def test_refused_in_one_line(tmp_path, capsys, name, command):
    model, fragment = CASES[name]
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    args = [command, str(path)] + (["-o", str(tmp_path / "out")] if command == "convert" else [])
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_verify_reports_onnxruntime_refusal_in_one_line(tmp_path, capsys):
    """Converts (the converter computes in float anyway) but onnxruntime refuses the int32 output type."""
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 3, 4])], [("y", [1, 3, 4])])
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.INT32
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "onnxruntime" in err[0], err


def test_checker_complaint_over_several_lines_is_one_whole_line(tmp_path, capsys):
    """onnx's checker wraps 'input ... of node:' over lines; the warning keeps the whole sentence."""
    model = make_model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                        helper.make_node("Neg", ["r"], ["y"], name="second")], [("x", [1, 3, 4])], [("y", [1, 3, 4])])
    model.graph.node.reverse()          # onnxruntime sorts the nodes itself; the converter does too
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert main(["convert", str(path), "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("onnx2ncnn: warning:"), err
    assert "input 'r' of node: name: second OpType: Neg is not output of any previous nodes" in err[0], err

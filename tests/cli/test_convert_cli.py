"""The `onnx2ncnn convert` contract: exit codes, one-line errors, JSON, whole-or-nothing output."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from onnx_cases import MODELS, make_model


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "converter", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def assert_bad_input(result, *fragments):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {result.stderr}"
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def save(model, path):
    onnx.save(model, str(path))
    return path


def add_model(shape=(1, 3, 4)):
    return make_model([helper.make_node("Add", ["x", "b"], ["y"])], [("x", list(shape))],
                      [("y", list(shape))], [("b", np.ones(shape[-1:], np.float32))])


def test_json_contract(tmp_path):
    model = save(add_model(), tmp_path / "m.onnx")
    result = run_cli("convert", model, "-o", tmp_path / "out", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["param"] == str(tmp_path / "out" / "m.ncnn.param")
    assert report["bin"] == str(tmp_path / "out" / "m.ncnn.bin")
    assert (tmp_path / "out" / "m.ncnn.param").is_file() and (tmp_path / "out" / "m.ncnn.bin").is_file()
    assert report["layers"] == 3          # Input, MemoryData, BinaryOp: ranks already agree
    assert report["reshapes_inserted"] == 0
    assert report["inputs"] == [{"onnx": "x", "ncnn": "x", "onnx_shape": [1, 3, 4],
                                 "ncnn_shape": [3, 4], "batch_axis": 0, "dtype": "float32"}]
    assert report["outputs"][0]["ncnn_shape"] == [3, 4]


def test_default_output_is_beside_the_model(tmp_path):
    model = save(add_model(), tmp_path / "net.onnx")
    result = run_cli("convert", model)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "net.ncnn.param").is_file()
    assert "wrote" in result.stdout


def test_missing_file(tmp_path):
    assert_bad_input(run_cli("convert", tmp_path / "nope.onnx"), "does not exist")


def test_not_an_onnx_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00garbage\xff" * 10)
    result = run_cli("convert", bad, "-o", tmp_path)
    assert_bad_input(result, "bad.onnx")
    assert not list(tmp_path.glob("*.ncnn.*"))


def test_invalid_model(tmp_path):
    model = add_model()
    model.graph.node[0].input[1] = "missing_tensor"
    result = run_cli("convert", save(model, tmp_path / "m.onnx"), "-o", tmp_path)
    assert_bad_input(result, "not a valid ONNX model")
    assert not list(tmp_path.glob("*.ncnn.*"))


def test_unsupported_ops_listed_at_once(tmp_path):
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]),
             helper.make_node("Hardmax", ["s"], ["t"], name="hm"),
             helper.make_node("ThresholdedRelu", ["t"], ["y"], name="tr")]
    model = make_model(nodes, [("x", [1, 3, 4])], [("y", [1, 3, 4])], [("b", np.ones(4, np.float32))])
    result = run_cli("convert", save(model, tmp_path / "m.onnx"), "-o", tmp_path)
    assert_bad_input(result, "Hardmax ('hm')", "ThresholdedRelu ('tr')")
    assert not list(tmp_path.glob("*.ncnn.*"))


@pytest.mark.parametrize("arg, fragment", [
    ("x=1,3", "rank 3"),
    ("x=1,3,5", "do not broadcast"),      # a fixed dim may be overridden (warning), but b has 4
    ("y=1,3,4", "unknown input"),
    ("x=1,a,4", "NAME=D1,D2"),
    ("x", "NAME=D1,D2"),
    ("x=1,0,4", "positive"),
])
def test_bad_input_shapes(tmp_path, arg, fragment):
    result = run_cli("convert", save(add_model(), tmp_path / "m.onnx"), "-o", tmp_path,
                     "--input-shape", arg)
    assert_bad_input(result, fragment)
    assert not list(tmp_path.glob("*.ncnn.*"))


def test_impossible_rank(tmp_path):
    shape = [2, 2, 3, 4, 5]   # no batch axis: five ncnn axes, and no two neighbours broadcast alike
    model = make_model([helper.make_node("Mul", ["x", "k"], ["y"])], [("x", shape)], [("y", shape)],
                       [("k", np.ones([2, 1, 3, 1, 5], np.float32))])
    result = run_cli("convert", save(model, tmp_path / "m.onnx"), "-o", tmp_path)
    assert_bad_input(result, "at most 4")
    assert not list(tmp_path.glob("*.ncnn.*"))


def test_unwritable_output_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = run_cli("convert", save(add_model(), tmp_path / "m.onnx"), "-o", blocker / "sub")
    assert_bad_input(result, "cannot write")


def test_usage_error_is_one_line(tmp_path):
    assert_bad_input(run_cli("convert"), "model")
    assert_bad_input(run_cli("frobnicate"), "invalid choice")


def test_unsafe_names_are_replaced_and_reported(tmp_path):
    nodes = [helper.make_node("Mul", ["in put", "k"], ["out put"])]
    model = make_model(nodes, [("in put", [1, 3])], [("out put", [1, 3])], [("k", np.float32(2.0))])
    result = run_cli("convert", save(model, tmp_path / "m.onnx"), "-o", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["inputs"][0]["onnx"] == "in put" and report["inputs"][0]["ncnn"] == "in_put"
    assert report["outputs"][0]["ncnn"] == "out_put"
    assert " in put " not in (tmp_path / "m.ncnn.param").read_text()


def test_bundled_model_converts(tmp_path):
    result = run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["layers"] > 0


def test_size_dependent_value_names_the_input_and_node(tmp_path):
    """A size used as data in a way ncnn cannot build (a Range from a fractional start over a
    run-time extent) asks for --input-shape, naming the input and the node; with it, it converts."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["h"], axis=0, name="pick_h"),
             helper.make_node("Cast", ["h"], ["hf"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Range", ["zero", "hf", "one"], ["r"], name="grid"),
             helper.make_node("Add", ["x", "r"], ["y"])]
    inits = [("i", np.array(3, np.int64)), ("zero", np.array(0.5, np.float32)), ("one", np.array(1, np.float32))]
    model = make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)
    path = save(model, tmp_path / "m.onnx")
    assert_bad_input(run_cli("convert", path, "-o", tmp_path), "Range node 'grid'", "input(s) x",
                     "--input-shape x=")
    assert not list(tmp_path.glob("*.ncnn.*"))
    assert run_cli("convert", path, "-o", tmp_path, "--input-shape", "x=1,3,8,8").returncode == 0



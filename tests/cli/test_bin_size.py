"""`convert` reports the .bin against the model's float32-equivalent weights, warns above 1.1x
naming the largest cause, and --json carries both numbers."""
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper

from onnx_cases import make_model


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "converter", *map(str, args)], capture_output=True, text=True)


def _convs(shared: bool):
    """Two 3x3 Convs in a row; with `shared` both read one initializer (written once in ONNX)."""
    rng = np.random.default_rng(0)
    w1 = rng.uniform(-0.1, 0.1, (32, 32, 3, 3)).astype(np.float32)
    weights = [("w1", w1)] + ([] if shared else [("w2", w1 + 1)])
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w1" if shared else "w2"], ["y"], pads=[1, 1, 1, 1])]
    return make_model(nodes, [("x", [1, 32, 8, 8])], [("y", None)], weights)


def test_json_has_both_sizes_and_no_warning_within_the_model_size(tmp_path):
    onnx.save(_convs(shared=False), tmp_path / "m.onnx")
    result = run_cli("convert", tmp_path / "m.onnx", "-o", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["model_weight_bytes"] == 2 * 32 * 32 * 9 * 4
    assert report["bin_bytes"] == (tmp_path / "m.ncnn.bin").stat().st_size
    assert report["model_weight_bytes"] <= report["bin_bytes"] <= 1.1 * report["model_weight_bytes"]
    assert report["duplicated_weight_bytes"] == 0 and not report["warnings"]
    human = run_cli("convert", tmp_path / "m.onnx", "-o", tmp_path)
    assert ".bin 73.7 KB for 73.7 KB of ONNX weights (float32): 1.00x" in human.stdout, human.stdout
    assert "warning" not in human.stderr


def test_a_shared_weight_written_twice_is_named(tmp_path):
    onnx.save(_convs(shared=True), tmp_path / "m.onnx")
    result = run_cli("convert", tmp_path / "m.onnx", "-o", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    one = 32 * 32 * 9 * 4
    assert report["model_weight_bytes"] == one
    assert report["duplicated_weight_bytes"] == one
    assert report["duplicated_weights"] == [{"bytes": one, "copies": 2, "layers": ["Conv_0", "Conv_1"]}]
    (warning,) = report["warnings"]
    assert warning.startswith(".bin is 2.0x the model's weights") and "written 2 times" in warning
    human = run_cli("convert", tmp_path / "m.onnx", "-o", tmp_path)
    assert "onnx2ncnn: warning: .bin is 2.0x" in human.stderr

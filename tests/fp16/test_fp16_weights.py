"""convert --fp16 names the weights fp16 cannot hold: one line each on stderr and in --json."""
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper

from converter import convert
from converter.verification.fp16 import weight_warnings
from onnx_cases import make_model


def conv_model(weight: np.ndarray) -> onnx.ModelProto:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="the_conv")
    return make_model([node], [("x", [1, 2, 4, 4])], [("y", [1, 2, 4, 4])], [("w", weight)])


def weights(*special: float) -> np.ndarray:
    w = np.random.default_rng(0).uniform(-1, 1, (2, 2, 1, 1)).astype(np.float32)
    w.flat[:len(special)] = special
    return w


def convert_cli(model, tmp_path, *options):
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return subprocess.run([sys.executable, "-m", "converter", "convert", str(path), "-o", str(tmp_path), *options],
                          capture_output=True, text=True)


def test_overflow_and_flush_named_once_each(tmp_path):
    result = convert_cli(conv_model(weights(1e5, -7e4, 1e-9)), tmp_path, "--fp16", "--json")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    assert all(line.startswith("onnx2ncnn: warning: --fp16: Convolution layer") and "the_conv" in line
               for line in lines)
    assert "2 value(s) over 65504 become inf" in lines[0] and "1 nonzero value(s)" in lines[1]
    assert json.loads(result.stdout)["warnings"] == [line.removeprefix("onnx2ncnn: warning: ") for line in lines]


def test_silent_without_fp16_or_when_fp16_holds_them(tmp_path):
    assert convert_cli(conv_model(weights(1e5)), tmp_path).stderr == ""
    assert convert_cli(conv_model(weights(1000.0, 1e-3)), tmp_path, "--fp16").stderr == ""


def test_many_subnormals_named():
    w = np.full((2, 2, 1, 1), 1e-6, np.float32)      # under 2**-14: fp16 keeps about 4 bits
    lines = weight_warnings(convert(conv_model(w)).graph)
    assert len(lines) == 1 and "4 of 4 value(s) are fp16 subnormals" in lines[0], lines

"""The <stem>_ncnn.py convert writes: it runs the files in the real ncnn (no onnx2ncnn needed)
and its --check agrees with onnxruntime on the .onnx."""
import importlib.util
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

from onnx import helper

from onnx_cases import MODELS, make_model, onnxruntime_outputs, random_inputs
from test_convert_cli import run_cli, save


@pytest.mark.parametrize("name", ["bcast_demo", "bert_tiny", "cnn_dynamic"])
def test_generated_script_checks_against_onnxruntime(tmp_path, name):
    result = run_cli("convert", MODELS / f"{name}.onnx", "-o", tmp_path / "out", "--json")
    assert result.returncode == 0, result.stderr
    script = json.loads(result.stdout)["script"]
    assert script == str(tmp_path / "out" / f"{name}_ncnn.py")
    # run from elsewhere, with a Python path that cannot see this repository
    run = subprocess.run([sys.executable, "-I", script, "--check"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok " in run.stdout and "MISMATCH" not in run.stdout


def test_generated_model_class_takes_and_gives_onnx_layout(tmp_path):
    assert run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path).returncode == 0
    spec = importlib.util.spec_from_file_location("bcast_demo_ncnn", tmp_path / "bcast_demo_ncnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = onnx.load(str(MODELS / "bcast_demo.onnx"))
    feeds = random_inputs(model)
    got = module.Model().run(feeds)
    for name, want in onnxruntime_outputs(model, feeds).items():
        assert got[name].shape == want.shape
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


def test_check_fails_when_the_numbers_differ(tmp_path):
    """--check is a real check: against another model with the same inputs and outputs it exits 1."""
    def unary(op):
        return make_model([helper.make_node(op, ["x"], ["y"])], [("x", [1, 3, 4])], [("y", [1, 3, 4])])
    relu = save(unary("Relu"), tmp_path / "relu.onnx")
    other = save(unary("Sigmoid"), tmp_path / "sigmoid.onnx")
    assert run_cli("convert", relu).returncode == 0
    script = tmp_path / "relu_ncnn.py"
    same = subprocess.run([sys.executable, "-I", script, "--check"], capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    differ = subprocess.run([sys.executable, "-I", script, "--check", "--onnx", other], capture_output=True, text=True)
    assert differ.returncode == 1 and "MISMATCH y" in differ.stdout, differ.stdout + differ.stderr

"""`onnx2ncnn verify` and `onnx2ncnn run`, and the same through the Python API."""
import json

import numpy as np
import onnx
import pytest

import converter
from onnx_cases import MODELS, onnxruntime_outputs, random_inputs
from test_convert_cli import add_model, assert_bad_input, run_cli, save

BUNDLED = sorted(p.name for p in MODELS.glob("*.onnx"))


@pytest.mark.parametrize("name", BUNDLED)
def test_verify_passes_on_bundled_models(name):
    result = run_cli("verify", MODELS / name, "--backend", "both", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] and report["outputs"]
    assert {o["backend"] for o in report["outputs"]} == {"interp", "ncnn"}


def test_verify_without_broadcast_fix_fails_and_names_the_binaryop():
    result = run_cli("verify", MODELS / "bcast_demo.onnx", "--no-broadcast-fix")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BinaryOp layer" in result.stdout and "FAILED" in result.stdout


def test_verify_json_reports_errors_per_output():
    result = run_cli("verify", MODELS / "bcast_demo.onnx", "--no-broadcast-fix", "--backend", "ncnn", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert not report["passed"]
    assert {o["name"] for o in report["outputs"]} == {"out_image", "out_seq"}
    assert all(not o["passed"] for o in report["outputs"])
    first = report["divergences"][0]
    assert first["layer_type"] == "BinaryOp" and first["backend"] == "ncnn"


def test_verify_with_given_inputs(tmp_path):
    model = add_model()
    x = np.full((1, 3, 4), 0.25, np.float32)
    np.save(tmp_path / "x.npy", x)
    result = run_cli("verify", save(model, tmp_path / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == {"x": [1, 3, 4]}


@pytest.mark.parametrize("args, fragment", [
    (["--input", "x=/nonexistent.npy"], "cannot read"),
    (["--input", "nope"], "NAME=FILE.npy"),
    (["--input-shape", "z=1,2"], "unknown input"),
])
def test_verify_bad_input(tmp_path, args, fragment):
    result = run_cli("verify", save(add_model(), tmp_path / "m.onnx"), *args)
    assert_bad_input(result, fragment)


def test_verify_missing_model(tmp_path):
    assert_bad_input(run_cli("verify", tmp_path / "missing.onnx"), "does not exist")


def test_run_existing_files(tmp_path):
    model = onnx.load(str(MODELS / "bcast_demo.onnx"))
    converted = converter.convert(model)
    converted.save(tmp_path / "d.param", tmp_path / "d.bin")
    feeds = random_inputs(model)
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value[0])        # ncnn layout: batch axis dropped
    result = run_cli("run", tmp_path / "d.param", tmp_path / "d.bin", "--layout", "ncnn",
                     *[f"--input={n}={tmp_path / (n + '.npy')}" for n in feeds], "-o", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    got = np.load(tmp_path / "out.npz")
    for name, want in onnxruntime_outputs(model, feeds).items():
        np.testing.assert_allclose(got[name], want[0], rtol=1e-4, atol=1e-5)


def test_run_reports_malformed_files(tmp_path):
    (tmp_path / "bad.param").write_text("7767517\n1 1\nNoSuchLayer l 0 1 x\n")
    (tmp_path / "bad.bin").write_bytes(b"")
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    result = run_cli("run", tmp_path / "bad.param", tmp_path / "bad.bin", "--input", f"x={tmp_path / 'x.npy'}")
    assert_bad_input(result, "NoSuchLayer")


def test_python_api_round_trip(tmp_path):
    model = onnx.load(str(MODELS / "bcast_demo.onnx"))
    report = converter.verify(model, backend="interp")
    assert report.passed and len(report.outputs) == 2
    converted = converter.convert(model)
    converted.save(tmp_path / "d.param", tmp_path / "d.bin")
    loaded = converter.load_ncnn(tmp_path / "d.param", tmp_path / "d.bin")
    feeds = random_inputs(model)
    outputs = loaded.run({k: v[0] for k, v in feeds.items()}, layout="ncnn")
    for name, want in onnxruntime_outputs(model, feeds).items():
        np.testing.assert_allclose(outputs[name], want[0], rtol=1e-4, atol=1e-5)
    assert not converter.verify(model, broadcast_fix=False).passed

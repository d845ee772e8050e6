"""--target-ncnn, ncnn_min_version and --ncnn-python through the command line and the generated
script, with the pip releases the set-up builds (tests/releases/runtimes.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from converter.cli import main

MODELS = Path(__file__).resolve().parents[2] / "models"
OLD = 20240410


def _atanh_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])
    graph = helper.make_graph([helper.make_node("Atanh", ["x"], ["y"], name="the_atanh")], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_layer_the_release_lacks_is_refused_in_one_line(tmp_path, capsys):
    model = _atanh_model(tmp_path / "atanh.onnx")
    assert main(["convert", str(model), "-o", str(tmp_path / "out"), "--target-ncnn", "20250503"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "node 'the_atanh'" in err and "UnaryOp op_type 26" in err and "20260526" in err
    assert not (tmp_path / "out").exists()
    assert main(["convert", str(model), "-o", str(tmp_path / "new"), "--json", "--target-ncnn", "20260526"]) == 0
    assert json.loads(capsys.readouterr().out)["ncnn_min_version"] == 20260526


@pytest.mark.parametrize("text,says", [("2024", "YYYYMMDD"), ("20230517", "20240410 and newer"),
                                       ("1.0.2024041x", "YYYYMMDD")])
def test_a_bad_release_is_one_line(tmp_path, capsys, text, says):
    assert main(["convert", str(MODELS / "cnn_small.onnx"), "-o", str(tmp_path), "--target-ncnn", text]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and says in err


def _script(tmp_path: Path, capsys, *options: str) -> tuple[dict, Path]:
    assert main(["convert", str(MODELS / "vit_tiny.onnx"), "-o", str(tmp_path), "--json", *options]) == 0
    result = json.loads(capsys.readouterr().out)
    record = json.loads(Path(result["param"]).with_suffix(".json").read_text())
    assert record["ncnn_min_version"] == result["ncnn_min_version"]
    return result, Path(result["script"])


def test_the_script_checks_the_installed_release_and_runs_another(tmp_path, capsys, runtimes):
    newest, script = _script(tmp_path / "newest", capsys)
    assert newest["ncnn_min_version"] > OLD             # SDPA: vit_tiny's attention at small embeds
    done = subprocess.run([sys.executable, str(script), "--check", "--ncnn-python", str(runtimes[OLD])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0
    assert f"need ncnn {newest['ncnn_min_version']}" in done.stderr and "1.0.20240410" in done.stderr
    old, script = _script(tmp_path / "old", capsys, "--target-ncnn", str(OLD))
    assert old["ncnn_min_version"] == OLD
    done = subprocess.run([sys.executable, str(script), "--check", "--ncnn-python", str(runtimes[OLD])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok logits" in done.stdout


def test_verify_in_an_old_release_at_fixed_sizes(capsys, runtimes):
    """A dynamic FPN resizes to another level's run-time size (Interp 9=): ncnn 20240410 reads no
    expressions, so its files are made at fixed sizes, and say so."""
    model = MODELS / "zoo" / "fpn_dyn_ts.onnx"
    code = main(["verify", str(model), "--backend", "ncnn", "--target-ncnn", str(OLD),
                 "--ncnn-python", str(runtimes[OLD])])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "reads no shape expressions" in out and "PASSED" in out


def test_verify_says_when_the_runtime_is_older_than_the_files(capsys, runtimes):
    code = main(["verify", str(MODELS / "vit_tiny.onnx"), "--backend", "ncnn", "--ncnn-python", str(runtimes[OLD])])
    out = capsys.readouterr().out
    assert code == 1
    assert "convert with --target-ncnn 20240410" in out


def test_a_missing_ncnn_python_is_one_line(capsys, tmp_path):
    code = main(["verify", str(MODELS / "cnn_small.onnx"), "--backend", "ncnn", "--ncnn-python",
                 str(tmp_path / "nope" / "python")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "--ncnn-python" in err

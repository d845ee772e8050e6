"""`onnx2ncnn convert MODEL --calibrate INPUTS...`: a float model to int8 ncnn files in one command.

End to end from a folder of images (verify's image options), through onnxruntime.quantization, to files
the real ncnn runs: they are judged as fast mode is (tests/real_models/test_int8_fast.py), no farther from
the float model than onnxruntime's own run of the QDQ model the same calibration makes.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from converter.calibration import quantize
from converter.verification.image_input import parse_image_spec
from converter.ncnn_side.runtime import run_ncnn
from converter.verification.int8_fast import rel_rms

MODEL = Path(__file__).resolve().parents[2] / "models" / "cnn_mobile.onnx"     # Conv/BN/Clip/GAP/Gemm, 224x224
OPTIONS = "size=224x224,mean=0.485,0.456,0.406,std=0.229,0.224,0.225"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "converter", *map(str, args)], capture_output=True, text=True)


def write_photos(folder: Path, count: int, seed: int) -> list[Path]:
    """Smooth colour fields with a block, as binary PPM (what a photo looks like to a CNN)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng, paths = np.random.default_rng(seed), []
    yy, xx = np.mgrid[0:96, 0:128] / 128
    for k in range(count):
        img = np.stack([0.5 + 0.4 * np.sin(rng.uniform(1, 6) * xx + rng.uniform(1, 6) * yy + rng.uniform(0, 6))
                        for _ in range(3)], -1)
        y0, x0 = rng.integers(0, 48), rng.integers(0, 64)
        img[y0:y0 + 24, x0:x0 + 32] = rng.uniform(0, 1, 3)
        path = folder / f"photo{k}.ppm"
        path.write_bytes(b"P6\n128 96\n255\n" + (img * 255).round().astype(np.uint8).tobytes())
        paths.append(path)
    return paths


def test_calibrate_from_images_end_to_end(tmp_path):
    write_photos(tmp_path / "calib", 6, seed=1)
    result = run_cli("convert", MODEL, "--calibrate", f"{tmp_path / 'calib'}/:{OPTIONS}", "-o", tmp_path / "out", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["int8_mode"] == "fast"              # --calibrate's default: no QDQ spec to match bit for bit
    assert record["int8_layers"] >= 5
    assert len(record["int8_dropped"]) >= 5 and all(isinstance(v, str) for v in record["int8_dropped"].values())
    assert Path(record["param"]).name == "cnn_mobile.ncnn.param" and Path(record["bin"]).is_file()
    # the same calibration by the library gives onnxruntime's int8 run to measure against
    qdq = tmp_path / "qdq.onnx"
    quantize(str(MODEL), [f"{tmp_path / 'calib'}/:{OPTIONS}"], qdq)
    (photo,) = write_photos(tmp_path / "test", 1, seed=7)
    x = parse_image_spec("input", f"{photo}:{OPTIONS}").to_array("input", [1, 3, 224, 224])
    want = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    int8 = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    (e_in,), (e_out,) = record["inputs"], record["outputs"]
    got = run_ncnn(record["param"], record["bin"], {e_in["ncnn"]: x[0]}, [e_out["ncnn"]])[e_out["ncnn"]]
    allowed = rel_rms(int8, want)
    assert 0 < allowed and rel_rms(got.reshape(want.shape), want) <= allowed


def test_calibrate_from_npy_files_exact_mode(tmp_path):
    rng = np.random.default_rng(3)
    for k in range(3):
        np.save(tmp_path / f"s{k}.npy", rng.normal(0, 1, (1, 3, 224, 224)).astype(np.float32))
    result = run_cli("convert", MODEL, "--calibrate", *sorted(tmp_path.glob("*.npy")), "--int8", "exact",
                     "-o", tmp_path / "out", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["int8_mode"] == "exact" and record["int8_layers"] >= 5 and "int8_dropped" not in record


@pytest.mark.parametrize("inputs, fragment", [
    (["nowhere/"], "is not a folder, an image or a .npy file"),
    (["EMPTY"], "has no images or .npy files"),
    (["WRONG.npy"], "takes [1, 3, 224, 224]"),
])
def test_calibrate_bad_inputs_one_line_no_files(tmp_path, inputs, fragment):
    (tmp_path / "empty").mkdir()
    np.save(tmp_path / "wrong.npy", np.zeros((1, 3, 8, 8), np.float32))
    named = [{"EMPTY": tmp_path / "empty", "WRONG.npy": tmp_path / "wrong.npy"}.get(i, i) for i in inputs]
    result = run_cli("convert", MODEL, "--calibrate", *named, "-o", tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()

"""End-to-end detectors (models/detectors, scripts/zoo_detectors.py: ultralytics YOLO26n and YOLOv10n NMS-free
heads, torchvision's SSD with NMS) through `--host-tail`: the real ncnn (the generated script, in a child
process) and the interpreter, then the tail in onnxruntime, against onnxruntime on the whole model, fed an
image the random (rescaled) heads detect in; and the refusal without it naming the tensors to cut at."""
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import converter
from onnx_cases import MODELS
from test_convert_cli import assert_bad_input, run_cli

DETECTORS = MODELS / "detectors"
MANIFEST = json.loads((DETECTORS / "manifest.json").read_text())
REFUSED = {"yolo26n_e2e": ["TopK", "Mod"], "yolov10n_e2e": ["TopK", "Mod"], "ssdlite_tiny": ["If", "NonZero", "TopK"]}


def scene() -> np.ndarray:
    return np.load(DETECTORS / "scene.npy").astype(np.float32) / 255


def onnxruntime_outputs(name: str) -> dict:
    session = ort.InferenceSession(str(DETECTORS / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {MANIFEST[name]["input"]: scene()})))


def within(got, want):
    """The README's --check rule: |got - ort| <= 1e-3 max|ort| + 1e-3 |ort|."""
    want = np.asarray(want, np.float64)
    return np.all(np.abs(np.asarray(got, np.float64) - want) <= 1e-3 * np.abs(want).max() + 1e-3 * np.abs(want))


def test_the_scene_is_detected():
    """The random heads find things in the scene: scores above the models' thresholds, not all tied."""
    for name in MANIFEST:
        out = onnxruntime_outputs(name)
        scores = out["scores"] if "scores" in out else out["output0"][0, :, 4]
        assert scores.size >= 10 and scores.max() > 0.5 and np.unique(scores).size > scores.size // 2, name


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_real_ncnn_and_tail_match_onnxruntime(tmp_path, name):
    np.save(tmp_path / "scene.npy", scene())
    result = run_cli("convert", DETECTORS / f"{name}.onnx", "-o", tmp_path / "out", "--host-tail", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    tail = tmp_path / "out" / f"{name}_tail.onnx"
    assert record["tail"]["file"] == str(tail) and tail.is_file()
    assert {n.op_type for n in onnx.load(str(tail)).graph.node} >= set(REFUSED[name])
    ncnn_ops = (tmp_path / "out" / f"{name}.ncnn.param").read_text()
    assert "TopK" not in ncnn_ops and all(e["dtype"] == "float32" for e in record["outputs"])
    sidecar = json.loads((tmp_path / "out" / f"{name}.ncnn.json").read_text())
    assert sorted(sidecar["tail"]["outputs"]) == sorted(MANIFEST[name]["outputs"])
    # the generated script: real ncnn, then the tail, --check against onnxruntime on the whole model
    run = subprocess.run([sys.executable, "-I", record["script"], "--check",
                          f"{MANIFEST[name]['input']}={tmp_path / 'scene.npy'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "MISMATCH" not in run.stdout and "rows in another order" not in run.stdout, run.stdout
    for output in MANIFEST[name]["outputs"]:
        assert f"ok {output} " in run.stdout, run.stdout
    # the Python API on the same files: the interpreter, then the tail
    got = converter.load_ncnn(tmp_path / "out" / f"{name}.ncnn.param", tmp_path / "out" / f"{name}.ncnn.bin").run(
        {MANIFEST[name]["input"]: scene()})
    for output, want in onnxruntime_outputs(name).items():
        assert got[output].shape == want.shape and got[output].dtype == want.dtype, output
        assert within(got[output], want), (output, np.abs(got[output] - want).max())


def test_refusal_names_the_cut_and_it_pastes(tmp_path):
    model = DETECTORS / "yolo26n_e2e.onnx"
    result = run_cli("convert", model, "-o", tmp_path)
    assert_bad_input(result, "TopK", "--outputs", "--host-tail")
    names = result.stderr.split("--outputs ")[1].split(" ")[0].rstrip(",")      # as a user copies it
    assert not list(tmp_path.iterdir())
    pasted = run_cli("convert", model, "-o", tmp_path, "--outputs", names, "--json")
    assert pasted.returncode == 0, pasted.stderr
    assert [e["onnx"] for e in json.loads(pasted.stdout)["outputs"]] == names.split(",")
    assert not (tmp_path / "yolo26n_e2e_tail.onnx").exists()


def test_ssd_refusal_names_the_data_and_the_cut():
    """The If on how many boxes pass the threshold: data, not a size --input-shape could fix; the cut
    named is the head that converts (before the NonZero/TopK the If's branches need)."""
    result = run_cli("convert", DETECTORS / "ssdlite_tiny.onnx", "-o", "/nonexistent")
    assert_bad_input(result, "If node", "depends on data", "NonZero", "--outputs")
    assert "--input-shape" not in result.stderr.replace("no --input-shape", "")
    names = result.stderr.split("--outputs ")[1].split(" ")[0].rstrip(",").split(",")
    proto = onnx.load(str(DETECTORS / "ssdlite_tiny.onnx"))
    producers = {o: n.op_type for n in proto.graph.node for o in n.output}
    assert names and all(producers[n] not in ("TopK", "NonZero", "If") for n in names)


def test_verify_host_tail_compares_the_whole_model(tmp_path):
    np.save(tmp_path / "scene.npy", scene())
    result = run_cli("verify", DETECTORS / "yolov10n_e2e.onnx", "--host-tail", "--json",
                     "--input", f"images={tmp_path / 'scene.npy'}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    checks = {(o["name"], o["backend"]): o for o in json.loads(result.stdout)["outputs"]}
    assert checks[("output0", "interp+tail")]["passed"]
    assert checks[("output0", "interp+tail")]["max_abs"] < 1e-3

"""The <stem>_ncnn.py of a decoder step generates tokens in the real ncnn with no onnx2ncnn on the
path, and its --check compares them with onnxruntime step by step; the cache pairing it and the
Python API use is read from names alone (so encoder-decoder steps' fixed cross caches stay inputs)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from converter.cli import main
from converter.shapes.decoder_layout import cache_pairs, is_cross
from converter.verification.harness import script_path

DECODERS = Path(__file__).resolve().parents[2] / "models" / "decoders"
MANIFEST = json.loads((DECODERS / "manifest.json").read_text())


def _script(tmp_path, stem):
    onnx_path = tmp_path / f"{stem}.onnx"
    shutil.copy(DECODERS / MANIFEST[stem]["file"], onnx_path)
    assert main(["convert", str(onnx_path), "-o", str(tmp_path), "-q"]) == 0
    return script_path(tmp_path / f"{stem}.ncnn.param")


def test_generate_mode_matches_onnxruntime(tmp_path):
    stem = "qwen3_dynamo"
    script = _script(tmp_path, stem)
    prompt = ",".join(map(str, MANIFEST[stem]["prompt"]))
    run = subprocess.run([sys.executable, "-I", str(script), "--generate", "32", "--prompt", prompt, "--check"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"tokens: {' '.join(map(str, MANIFEST[stem]['tokens']))}" in run.stdout
    assert "ok: 32 tokens" in run.stdout and "MISMATCH" not in run.stdout


def test_generate_check_fails_on_another_model(tmp_path):
    """--check against a different decoder's ONNX (same layout) reports the steps that differ."""
    script = _script(tmp_path, "qwen2_ts")
    run = subprocess.run([sys.executable, "-I", str(script), "--generate", "4", "--check",
                          "--onnx", str(DECODERS / MANIFEST["qwen3_ts"]["file"])],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and "MISMATCH step 0" in run.stdout, run.stdout + run.stderr


def test_cache_pairs_follow_names():
    inputs = ["input_ids", "encoder_hidden_states", "past_key_values.0.decoder.key", "past_key_values.0.decoder.value",
              "past_key_values.0.encoder.key", "past_key_values.0.encoder.value", "past.1.key"]
    outputs = ["logits", "present.0.decoder.key", "present.0.decoder.value", "present.1.key", "present_extra"]
    assert cache_pairs(inputs, outputs) == {"present.0.decoder.key": "past_key_values.0.decoder.key",
                                            "present.0.decoder.value": "past_key_values.0.decoder.value",
                                            "present.1.key": "past.1.key"}
    assert is_cross("past_key_values.0.encoder.key") and not is_cross("past_key_values.0.decoder.key")

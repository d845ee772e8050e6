"""Issue 24's models from packages nobody prepared for (scripts/fetch_models.py), through the CLI
as a user runs it: verify on both backends, exit codes and one-line refusals."""
import json
import subprocess
import sys

import pytest

from scripts.fetch_models import fetch


def cli(*args):
    return subprocess.run([sys.executable, "-m", "converter", *map(str, args)], capture_output=True, text=True)


def test_minilm_returns_its_input_ids_as_int32(tmp_path):
    model = fetch("minilm_paraphrase")
    shapes = ["--input-shape", "input_ids=1,16", "--input-shape", "attention_mask=1,16"]
    result = cli("verify", model, *shapes, "--backend", "both", "--json")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert cli("convert", model, *shapes, "-o", tmp_path).returncode == 0
    record = json.loads((tmp_path / "paraphrase-MiniLM-L3-v2.ncnn.json").read_text())
    assert {e["onnx"]: e["dtype"] for e in record["outputs"]}["output"] == "int32"


def test_onsets_cnn_is_refused_in_one_line_then_converts_at_real_sizes(tmp_path):
    model = fetch("madmom_onsets_cnn")
    refused = cli("convert", model, "-o", tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--input-shape" in refused.stderr and "Traceback" not in refused.stderr
    result = cli("verify", model, "--input-shape", "input=100,80,3", "--backend", "both")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr


@pytest.mark.parametrize("name", ["madmom_chroma_dnn", "sudachi_b_albert"])
def test_verify_feeds_what_the_model_accepts(name):
    result = cli("verify", fetch(name), "--backend", "both")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr

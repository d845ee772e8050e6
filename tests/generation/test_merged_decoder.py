"""Hugging Face optimum's merged decoder (scripts/export_merged.py: optimum's merge_decoders over a Qwen3
decoder without and with past) converts to a prefill/decode pair: `onnx2ncnn convert` writes
<stem>_prefill.ncnn.* and <stem>_decode.ncnn.*, each record naming both; 32 greedy tokens through the
pair (the prefill file for the first call, the decode file after) give onnxruntime's tokens on the
merged file fed as optimum feeds it (use_cache_branch False with an empty past, then True), and logits
within RTOL at every step (test_decoders.py says why 1e-4), in the interpreter, in real ncnn (child
process) and in the generated script."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from converter.api import load_ncnn
from converter.cli import main
from converter.generation import (compare, decoder_io, greedy, interpreter_step, merged_onnxruntime_step, ncnn_step,
                                  pair_step, read_pair)
from converter.ncnn_side.runtime import NcnnRunner

MERGED = Path(__file__).resolve().parents[2] / "models" / "decoders_merged"
MANIFEST = json.loads((MERGED / "manifest.json").read_text())["qwen3_merged"]
ONNX = MERGED / MANIFEST["file"]
RTOL, STEPS = 1e-4, 32


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("merged")
    assert main(["convert", str(ONNX), "-o", str(out), "-q"]) == 0
    return out, read_pair(out / "qwen3_merged_decode.ncnn.param")


@pytest.fixture(scope="module")
def reference(pair):
    io = decoder_io(pair[1]["decode"][2])
    ref = greedy(merged_onnxruntime_step(ONNX, io), io, MANIFEST["prompt"], STEPS)
    assert ref.tokens == MANIFEST["tokens"] and len(set(ref.tokens)) >= 8
    return ref


def test_pair_files_and_records(pair):
    """Two files named after the model, each record naming both; the prefill file takes no past and
    the branch input is no input of either; both files are ncnn's LLM form (one SDPA per layer, the
    prefill's keys the new tokens alone)."""
    out, files = pair
    prefill, decode = files["prefill"][2], files["decode"][2]
    assert prefill["pair"]["phase"] == "prefill" and decode["pair"]["phase"] == "decode"
    assert prefill["pair"]["decode"]["param"] == "qwen3_merged_decode.ncnn.param" == files["decode"][0].name
    assert [e["onnx"] for e in prefill["inputs"]] == ["input_ids", "attention_mask", "position_ids"]
    assert {"past_key_values.0.key", "past_key_values.1.value"} <= {e["onnx"] for e in decode["inputs"]}
    assert "use_cache_branch" not in {e["onnx"] for r in (prefill, decode) for e in r["inputs"]}
    for record in (prefill, decode):
        assert [e["onnx"] for e in record["outputs"]][:2] == ["logits", "present.0.key"]
    for phase in ("prefill", "decode"):
        types = [n.op for n in load_ncnn(*files[phase][:2]).graph.topological()]
        assert types.count("SDPA") == MANIFEST["layers"] and types.count("RotaryEmbed") == 2 * MANIFEST["layers"]
        assert not {"MatMul", "Softmax", "Tile", "If"} & set(types), (phase, types)
    assert (out / "qwen3_merged_decode_ncnn.py").is_file() and not (out / "qwen3_merged.ncnn.param").exists()


def test_pair_generates_onnxruntimes_tokens(pair, reference):
    files = pair[1]
    io = decoder_io(files["decode"][2])
    steps = {phase: interpreter_step(load_ncnn(param, bin_)) for phase, (param, bin_, _) in files.items()}
    got = greedy(pair_step(steps["prefill"], steps["decode"], io), io, MANIFEST["prompt"], STEPS)
    assert compare(reference, got, RTOL) == []
    runner = NcnnRunner(threads=1)
    steps = {phase: ncnn_step(param, bin_, record, runner) for phase, (param, bin_, record) in files.items()}
    got = greedy(pair_step(steps["prefill"], steps["decode"], io), io, MANIFEST["prompt"], STEPS)
    assert compare(reference, got, RTOL) == []
    worst = max(float(np.abs(a - b).max() / np.abs(a).max()) for a, b in zip(reference.logits, got.logits))
    assert worst < RTOL


def test_generated_script_runs_the_pair(pair):
    out = pair[0]
    prompt = ",".join(map(str, MANIFEST["prompt"]))
    run = subprocess.run([sys.executable, "-I", str(out / "qwen3_merged_decode_ncnn.py"), "--generate", str(STEPS),
                          "--prompt", prompt, "--check"], capture_output=True, text=True, cwd=out)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"tokens: {' '.join(map(str, MANIFEST['tokens']))}" in run.stdout
    assert "ok: 32 tokens" in run.stdout and "MISMATCH" not in run.stdout
    # the prefill file's own --check (random prompt): onnxruntime's merged file gets an empty past it does not read
    run = subprocess.run([sys.executable, "-I", str(out / "qwen3_merged_prefill_ncnn.py"), "--check"],
                         capture_output=True, text=True, cwd=out)
    assert run.returncode == 0 and "ok logits" in run.stdout, run.stdout + run.stderr


def test_fixed_branch_converts_one_file(tmp_path):
    """--input-value use_cache_branch=1 asks for the one branch: one file, and the prompt file beside it
    that any decoder step with a past gets (its generation's first call)."""
    assert main(["convert", str(ONNX), "-o", str(tmp_path), "-q", "--input-value", "use_cache_branch=1"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.param")) == ["qwen3_merged.ncnn.param", "qwen3_merged.ncnn.prompt.param"]

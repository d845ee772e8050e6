"""Decoder steps for 20260526, whose SDPA computes other numbers with a mask (releases.py): the
masked attention (T5's position bias and padding mask) stays MatMul/Softmax, the unmasked one over
the run-time cache (Whisper's decode step) is SDPA, and one step of each, at a past of 5 tokens,
matches onnxruntime in that release (the real-model rule of the release matrix)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import onnxruntime_outputs, to_ncnn

from real_models.real_check import within_tolerance

ENCDEC = Path(__file__).resolve().parents[2] / "models" / "encdec"
MANIFEST = json.loads((ENCDEC / "manifest.json").read_text())
RELEASE = 20260526
PAST, SOURCE = 5, 12


def step_feeds(io: dict, name: str) -> dict[str, np.ndarray]:
    rng, feeds = np.random.default_rng(0), {}
    for e in io["inputs"]:
        shape = [d or (PAST if ".decoder." in e["onnx"] else SOURCE) for d in e["onnx_shape"]]
        if e["onnx"] == "input_ids":
            feeds["input_ids"] = np.array([[5]], np.int64)
        elif e["onnx"] == "encoder_attention_mask":
            feeds[e["onnx"]] = np.array(MANIFEST[name]["encoder_attention_mask"], np.int64)
        else:
            feeds[e["onnx"]] = rng.uniform(-1, 1, shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("name,sdpa", [("t5", 0), ("whisper", 4)])
def test_decoder_step_for_20260526(tmp_path, runtimes, name, sdpa):
    path = ENCDEC / MANIFEST[name]["files"]["ts"]["decoder_with_past"]
    converted = convert(path, target_ncnn=RELEASE)
    types = [n.op for n in converted.graph.nodes.values() if n.ncnn]
    assert types.count("SDPA") == sdpa and (sdpa or types.count("Softmax") == 4), sorted(set(types))
    assert all(n.params.get(5, 0) == 0 for n in converted.graph.nodes.values() if n.op == "SDPA")
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    feeds = step_feeds(io, name)
    want = onnxruntime_outputs(onnx.load(str(path)), feeds)
    got = run_ncnn(param, bin_, {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]},
                   [e["ncnn"] for e in io["outputs"]], python=str(runtimes[RELEASE]))
    failures = [f"{e['onnx']}: {detail}" for e in io["outputs"]
                for ok, detail in [within_tolerance(got[e["ncnn"]], want[e["onnx"]])] if not ok]
    assert not failures, "\n".join(failures)

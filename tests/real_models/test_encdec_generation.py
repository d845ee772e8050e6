"""Encoder-decoder generation (models/encdec, scripts/export_encdec.py): the encoder once, then 32 greedy
tokens through the decoder pair optimum exports (the first step over the prompt, then one token per
step with the self cache at a run-time length and the cross cache fixed), each file converted once,
run by the real ncnn (child process) and the interpreter, against onnxruntime on the same ONNX files.

Tolerance: at every step |logits - onnxruntime's| <= 1e-4 * max|onnxruntime's logits|. Both sides run
float32 with other summation orders (ncnn's InnerProduct/Gemm/SDPA kernels, BLAS in the interpreter);
measured, the worst step of any model is about 1e-6 of the logits' range (whisper 5.6e-7), after 32
steps of carried caches. A wrong position row, a key the mask hides or shows wrongly, or a stale
cache moves logits by a sizeable part of their range (std > 1 by construction), and the tokens with it.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from real_models.encdec_generation import converted_runners, greedy, onnxruntime_runner

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models" / "encdec"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
STEPS = 32
PARTS = ("encoder", "decoder", "decoder_with_past")
CASES = [(name, exp) for name, entry in MANIFEST.items() for exp in entry["files"]]


def attention_layers(model) -> dict[str, int]:
    """SDPA layers, and what attention left written out: Softmax layers, and MatMuls of two run-time
    blobs (a projection's MatMul reads its weight from a MemoryData)."""
    graph = model.graph
    layers = [n for n in graph.nodes.values() if n.ncnn]
    weights = {o for n in layers if n.op == "MemoryData" for o in n.outputs}
    return {"SDPA": sum(n.op == "SDPA" for n in layers), "Softmax": sum(n.op == "Softmax" for n in layers),
            "MatMul": sum(n.op == "MatMul" and not weights & set(n.inputs) for n in layers)}


def encoder_feeds(entry: dict) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    spec = entry["encoder_input"]
    rng = np.random.default_rng(spec["seed"])
    if spec["dtype"] == "int64":
        x = rng.integers(3, 63, spec["shape"]).astype(np.int64)
    else:
        x = rng.uniform(-1, 1, spec["shape"]).astype(np.float32)
    mask = entry["encoder_attention_mask"]
    mask = None if mask is None else np.array(mask, np.int64)
    return {spec["name"]: x, **({} if mask is None else {"attention_mask": mask})}, mask


def files(entry: dict, exp: str) -> list[Path]:
    # one encoder per model (TorchScript): the decoders are what differs between the exporters
    return [MODELS / entry["files"][exp if part != "encoder" else "ts"][part] for part in PARTS]


@pytest.mark.parametrize("name,exp", CASES, ids=[f"{n}_{e}" for n, e in CASES])
def test_greedy_generation_matches_onnxruntime(name, exp, tmp_path):
    entry = MANIFEST[name]
    feeds, mask = encoder_feeds(entry)
    want = greedy(*[onnxruntime_runner(p) for p in files(entry, exp)], feeds, entry["prompt"], STEPS, mask)
    # the export is right at every cache length: onnxruntime's tokens are torch's (full recompute)
    assert want.tokens == entry["greedy_tokens"]
    converted = [converted_runners(p, tmp_path) for p in files(entry, exp)]
    # every attention one ncnn SDPA (fuse_decoder_attention, fuse_sdpa): self-attention over the
    # run-time cache, masked or not, T5's position bias as its mask; cross-attention over the fixed
    # cache, with the encoder's padding mask where the model has one
    for part, (model, _), per_layer in zip(PARTS, converted, (1, 2, 2)):
        fused = {"SDPA": per_layer * entry["layers"], "Softmax": 0, "MatMul": 0}
        assert attention_layers(model) == fused, f"{name} {exp} {part}: {attention_layers(model)}, want {fused}"
    failures = []
    for backend in ("ncnn", "interpreter"):
        got = greedy(*[c[1][backend] for c in converted], feeds, entry["prompt"], STEPS, mask)
        if got.tokens != want.tokens:
            failures.append(f"{backend}: tokens {got.tokens}, onnxruntime {want.tokens}")
        for k, (g, w) in enumerate(zip(got.logits, want.logits)):
            err, bound = float(np.abs(g - w).max()), 1e-4 * float(np.abs(w).max())
            if not err <= bound:
                failures.append(f"{backend}: step {k} logits differ by {err:.3g} (bound {bound:.3g})")
                break
    assert not failures, f"{name} {exp}:\n" + "\n".join(failures)

"""Decoder-only LLMs exported with a run-time cache length (scripts/export_decoders.py: Qwen2,
Qwen3, Llama with grouped-query heads, Gemma3, Phi with partial rotary, SmolLM3; TorchScript and
dynamo; Gemma2's softcapped attention, dynamo; Qwen2 with sliding layers and Mistral, window 16, TorchScript:
the 38 tokens pass it) convert to one file that decodes at every cache length and, beside it on the same .bin, the
prompt file (the past removed) that takes a generation's first call: 32 greedy tokens carried step
by step through the files (present -> past) give onnxruntime's tokens from a true empty past, and
logits within RTOL of the largest |logit| at every step, in real ncnn and in the interpreter.

RTOL: every layer computes in float32; what differs is summation order (Gemm, softmax, norms) and
ncnn's SIMD approximations (exp in softmax/Swish), measured at 1e-6..1e-5 of the logits' range over
32 steps; 1e-4 leaves room for the CPU's kernel choice while a wrong mask, a rotated half, or a
cache row off by one position moves logits by O(1) (and the tokens)."""
import json
from pathlib import Path

import numpy as np
import pytest

from converter.api import load_ncnn
from converter.cli import main
from converter.generation import (compare, decoder_io, file_step, greedy, ncnn_step, onnxruntime_step, prompt_file,
                                  read_record)
from converter.ncnn_side.runtime import NcnnRunner

DECODERS = Path(__file__).resolve().parents[2] / "models" / "decoders"
MANIFEST = json.loads((DECODERS / "manifest.json").read_text())
RTOL = 1e-4
STEPS = 32
# Gemma3's sliding layer through torch.export numbers its keys from max(0, P - window + 1), a run-time
# size computed as a sum of ones (one Reduction more than the others' mask)
POSITION_SUMS = {"gemma3_dynamo": 1, "gemma2_dynamo": 1}     # Gemma2's sliding layer likewise
CONVERTED = sorted(MANIFEST)
# RotaryEmbed layers per file: q and k of every layer that rotates (SmolLM3's second layer has no rope)
ROTARY = {"smollm3": 2}
# attention ncnn's SDPA cannot express: Gemma2 caps its scores with tanh(s / cap) * cap before the
# mask and softmax, so it stays MatMul, tanh, Softmax (the cap must not be dropped: the tokens say so)
SOFTCAPPED = {"gemma2"}
LAYERNORM = {"phi": 1}      # LayerNorms per layer (attention and MLP in parallel), and a final one


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """stem -> (param, bin, record, NcnnModel), converted once per module by `onnx2ncnn convert` (which
    writes the prompt file beside, checked to read the same .bin)."""
    out, cache = tmp_path_factory.mktemp("decoders"), {}

    def get(stem):
        if stem not in cache:
            assert main(["convert", str(DECODERS / MANIFEST[stem]["file"]), "-o", str(out), "-q"]) == 0
            param, bin_ = out / f"{stem}.ncnn.param", out / f"{stem}.ncnn.bin"
            cache[stem] = (param, bin_, read_record(param), load_ncnn(param, bin_))
        return cache[stem]
    return get


@pytest.fixture(scope="module")
def reference(converted):
    """stem -> onnxruntime's greedy generation from a true empty past (past length 0)."""
    cache = {}

    def get(stem):
        if stem not in cache:
            entry = MANIFEST[stem]
            io = decoder_io(converted(stem)[2])
            cache[stem] = greedy(onnxruntime_step(DECODERS / entry["file"]), io, entry["prompt"], STEPS)
            assert cache[stem].tokens == entry["tokens"]      # the file is the one the manifest describes
        return cache[stem]
    return get


def worst(reference, got):
    return max(float(np.abs(a - b).max() / np.abs(a).max()) for a, b in zip(reference.logits, got.logits))


@pytest.mark.parametrize("stem", CONVERTED)
def test_interpreter_generates_onnxruntimes_tokens(stem, converted, reference):
    param, bin_, record, model = converted(stem)
    step, io = file_step(param, bin_, load=load_ncnn)
    got = greedy(step, io, MANIFEST[stem]["prompt"], STEPS)
    assert compare(reference(stem), got, RTOL) == [], f"worst {worst(reference(stem), got):.2e}"
    assert len(set(got.tokens)) >= 8       # the check means something: not one token repeated


@pytest.mark.parametrize("stem", CONVERTED)
def test_real_ncnn_generates_onnxruntimes_tokens(stem, converted, reference):
    param, bin_, record, model = converted(stem)
    step, io = file_step(param, bin_, runner=NcnnRunner(threads=1))
    got = greedy(step, io, MANIFEST[stem]["prompt"], STEPS)
    assert compare(reference(stem), got, RTOL) == [], f"worst {worst(reference(stem), got):.2e}"


@pytest.mark.parametrize("stem", CONVERTED)
def test_decoder_layers_are_ncnns_llm_form(stem, converted):
    """Attention is one SDPA per layer (no MatMul, Softmax or head repeat left), rotary is RotaryEmbed,
    and every norm of the RMS kind is RMSNorm (Phi's are LayerNorm), in both files; the prompt file's
    projections are Gemm, the decode file's (one token a call) InnerProduct, ncnn's one-row kernel, where
    they have no bias (ncnn reads Gemm's bias with a flag word, InnerProduct's without: the two files
    read one .bin), and it takes the past while the prompt file takes none."""
    param, bin_, record, model = converted(stem)
    prompt = load_ncnn(prompt_file(param), bin_)
    assert {e["onnx"] for e in record["inputs"]} - {e["onnx"] for e in prompt.io()["inputs"]} == set(decoder_io(record)["caches"])
    entry = MANIFEST[stem]
    layers = entry["layers"]
    per_layer = 6 if entry["family"] == "phi" else 7      # q k v o + gate up down (Phi: fc1 fc2), + the head
    decode_nodes = list(model.graph.topological())
    assert all(n.params.get(1, 0) == 0 for n in decode_nodes if n.op == "InnerProduct")          # no bias
    assert all(n.params.get(10, -1) != -1 for n in decode_nodes if n.op == "Gemm")               # a bias (C)
    assert sum(n.op in ("Gemm", "InnerProduct") for n in decode_nodes) == per_layer * layers + 1
    types = [n.op for n in prompt.graph.topological()]
    assert types.count("Gemm") == per_layer * layers + 1
    check_llm_form(stem, types)
    check_llm_form(stem, [n.op for n in decode_nodes])


def check_llm_form(stem, types):
    entry = MANIFEST[stem]
    layers = entry["layers"]
    assert types.count("RotaryEmbed") == ROTARY.get(entry["family"], 2 * layers)
    if entry["family"] in SOFTCAPPED:   # q k^T and p v, the Softmax between, per layer; no SDPA
        assert (types.count("SDPA"), types.count("MatMul"), types.count("Softmax")) == (0, 2 * layers, layers)
        assert types.count("TanH") == layers + 1          # each layer's cap on the scores, the logits' cap
    else:
        assert types.count("SDPA") == layers
        assert not {"MatMul", "Softmax", "MultiHeadAttention", "Tile"} & set(types), types
    if entry["family"] in LAYERNORM:
        assert types.count("LayerNorm") == LAYERNORM[entry["family"]] * layers + 1
    else:                               # two per layer and a final one (Qwen3/Gemma3 also norm q and k)
        assert types.count("RMSNorm") >= 2 * layers + 1
    assert types.count("Reduction") <= 2 + POSITION_SUMS.get(stem, 0)     # the mask's; no norm left written out


def test_generation_beyond_the_sliding_window(converted):
    """Gemma3 through torch.export generates past its window (512): a prompt longer than the window in
    the prompt file (its sliding layer masks the keys before the window and keeps window - 1 rows), then
    decode steps, each token and step's logits onnxruntime's, in the interpreter and real ncnn. (A cache
    row of zeros masked out, the start before prompt files, read the mask's first columns there and
    parted from onnxruntime.)"""
    stem = "gemma3_dynamo"
    param, bin_, record, model = converted(stem)
    prompt = [int(t) for t in np.random.default_rng(3).integers(0, 256, 515)]
    io = decoder_io(record)
    reference = greedy(onnxruntime_step(DECODERS / MANIFEST[stem]["file"]), io, prompt, 6)
    for backend in ({"load": load_ncnn}, {"runner": NcnnRunner(threads=1)}):
        step, io = file_step(param, bin_, **backend)
        got = greedy(step, io, prompt, 6)
        assert compare(reference, got, RTOL) == [], (backend, f"worst {worst(reference, got):.2e}")


def test_sliding_window_beyond_the_window(converted):
    """Gemma3 through torch.export past its window (511 rows): the sliding layer's cache cut to the window
    and the full layer's longer, a past value longer than the key's (onnxruntime takes it: min(Pv, 511)
    rows are read), the mask read at the columns the file reads (its first P + T), some of them 0; one
    step in the interpreter and real ncnn equal to onnxruntime's, presents and logits."""
    import onnxruntime
    stem = "gemma3_dynamo"
    param, bin_, record, model = converted(stem)
    session = onnxruntime.InferenceSession(str(DECODERS / MANIFEST[stem]["file"]), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    ncnn = ncnn_step(param, bin_, record)
    rng = np.random.default_rng(0)
    for pk, pv, full, t, zeros in ((511, 511, 600, 1, 7), (511, 600, 600, 1, 3), (300, 300, 700, 4, 5)):
        mask = np.ones((1, full + t), np.int64)
        mask[0, :zeros] = 0
        feeds = {"input_ids": rng.integers(0, 256, (1, t)), "attention_mask": mask,
                 "position_ids": np.arange(full, full + t)[None]}
        for name, p in (("0.key", pk), ("0.value", pv), ("1.key", full), ("1.value", full)):
            feeds[f"past_key_values.{name}"] = rng.standard_normal((1, 1, p, 16)).astype(np.float32)
        want = dict(zip(names, session.run(names, feeds)))
        assert want["present.0.key"].shape[2] == min(pk + t, 511) and want["present.1.key"].shape[2] == full + t
        for got in (model.run(feeds), ncnn(feeds)):
            for name in names:
                scale = max(float(np.abs(want[name]).max()), 1.0)
                assert got[name].shape == want[name].shape and np.abs(got[name] - want[name]).max() <= RTOL * scale, name

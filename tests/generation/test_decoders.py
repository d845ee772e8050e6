"""Decoder-only LLMs exported with a run-time cache length (scripts/export_decoders.py: Qwen2,
Qwen3, Llama with grouped-query heads, Gemma3, Phi with partial rotary, SmolLM3; TorchScript and
dynamo) convert to one file that prefills and decodes at every cache length: 32 greedy tokens
carried step by step through the files (present -> past) give onnxruntime's tokens, and logits
within RTOL of the largest |logit| at every step, in real ncnn and in the interpreter.

RTOL: every layer computes in float32; what differs is summation order (Gemm, softmax, norms) and
ncnn's SIMD approximations (exp in softmax/Swish), measured at 1e-6..1e-5 of the logits' range over
32 steps; 1e-4 leaves room for the CPU's kernel choice while a wrong mask, a rotated half, or a
cache row off by one position moves logits by O(1) (and the tokens)."""
import json
from pathlib import Path

import numpy as np
import pytest

from converter.api import convert
from converter.ir import ConversionError
from converter.generation import (compare, decoder_io, greedy, interpreter_step, ncnn_step, onnxruntime_step,
                                  read_record)

DECODERS = Path(__file__).resolve().parents[2] / "models" / "decoders"
MANIFEST = json.loads((DECODERS / "manifest.json").read_text())
RTOL = 1e-4
STEPS = 32
# Gemma3's sliding-window layer, through torch.export, cuts its cache to the window at run time and
# gathers the mask at arange(S) + max(P - window + 1, 0), P that cut cache's length, which the
# converter does not relate to the mask's or the head repeat's lengths: one line says so
REFUSED = {"gemma3_dynamo": "GatherND node 'node_GatherND_131': the attention mask is read at a run-time offset "
                            r"\(a sliding-window layer"}
CONVERTED = sorted(set(MANIFEST) - set(REFUSED))
# RotaryEmbed layers per file: q and k of every layer that rotates (SmolLM3's second layer has no rope)
ROTARY = {"smollm3": 2}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """stem -> (param, bin, record, NcnnModel), converted once per module."""
    out, cache = tmp_path_factory.mktemp("decoders"), {}

    def get(stem):
        if stem not in cache:
            model = convert(str(DECODERS / MANIFEST[stem]["file"]))
            param, bin_ = out / f"{stem}.ncnn.param", out / f"{stem}.ncnn.bin"
            model.save(param, bin_)
            cache[stem] = (param, bin_, read_record(param), model)
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
    io = decoder_io(record)
    got = greedy(interpreter_step(model), io, MANIFEST[stem]["prompt"], STEPS, slots=1)
    assert compare(reference(stem), got, RTOL) == [], f"worst {worst(reference(stem), got):.2e}"
    assert len(set(got.tokens)) >= 8       # the check means something: not one token repeated


@pytest.mark.parametrize("stem", CONVERTED)
def test_real_ncnn_generates_onnxruntimes_tokens(stem, converted, reference):
    param, bin_, record, model = converted(stem)
    got = greedy(ncnn_step(param, bin_, record), decoder_io(record), MANIFEST[stem]["prompt"], STEPS, slots=1)
    assert compare(reference(stem), got, RTOL) == [], f"worst {worst(reference(stem), got):.2e}"


@pytest.mark.parametrize("stem", CONVERTED)
def test_decoder_layers_are_ncnns_llm_form(stem, converted):
    """Attention is one SDPA per layer (no MatMul, Softmax or head repeat left), rotary is RotaryEmbed,
    projections are Gemm, and every norm of the RMS kind is RMSNorm (Phi's are LayerNorm)."""
    types = [n.op for n in converted(stem)[3].graph.topological()]
    entry = MANIFEST[stem]
    layers = entry["layers"]
    assert types.count("SDPA") == layers
    assert types.count("RotaryEmbed") == ROTARY.get(entry["family"], 2 * layers)
    assert not {"MatMul", "Softmax", "Tile", "InnerProduct", "MultiHeadAttention"} & set(types), types
    per_layer = 6 if entry["family"] == "phi" else 7      # q k v o + gate up down (Phi: fc1 fc2), + the head
    assert types.count("Gemm") == per_layer * layers + 1
    if entry["family"] == "phi":        # one LayerNorm per layer (attention and MLP in parallel), one final
        assert types.count("LayerNorm") == layers + 1
    else:                               # two per layer and a final one (Qwen3/Gemma3 also norm q and k)
        assert types.count("RMSNorm") >= 2 * layers + 1
    assert types.count("Reduction") <= 2        # the mask's; no norm left written out


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_refused_decoders_say_why(stem):
    with pytest.raises(ConversionError, match=REFUSED[stem]):
        convert(str(DECODERS / MANIFEST[stem]["file"]))

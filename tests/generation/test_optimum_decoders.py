"""Decoders exported by Hugging Face optimum's own exporter (scripts/export_optimum_decoders.py:
optimum-onnx's main_export, task text-generation-with-past, over transformers 4.57's modules: Llama
with grouped-query heads, Mistral with a sliding window shorter than the generation (its mask hides
the oldest keys), Phi3 with fused qkv/gate_up projections, GPT-NeoX with partial rotary and
parallel residual, GPT-BigCode with one kv head and learned positions) convert to the decode file
and its prompt file; greedy tokens through both, in the interpreter and real ncnn, equal
onnxruntime's on the same file from a true empty past, logits within RTOL of the largest at every
step (test_decoders.py says why 1e-4). optimum's files differ from torch.onnx's of transformers 5:
cache_position is arange(past, past + T), attention is torch's scaled_dot_product_attention as the
TorchScript exporter writes it (the scale split over q and k^T, a Softmax NaN guard), rotary's
frequencies an outer-product MatMul; each file is still ncnn's LLM form: one SDPA per layer,
RotaryEmbed, RMSNorm/LayerNorm, Gemm/InnerProduct projections, no MatMul or Softmax."""
import json
from pathlib import Path

import numpy as np
import pytest

from converter.api import load_ncnn
from converter.cli import main
from converter.generation import (compare, decoder_io, file_step, greedy, interpreter_step, ncnn_step,
                                  onnxruntime_step, prompt_file, read_record)
from converter.ncnn_side.runtime import NcnnRunner

FOLDER = Path(__file__).resolve().parents[2] / "models" / "decoders_optimum"
MANIFEST = json.loads((FOLDER / "manifest.json").read_text())
RTOL, STEPS = 1e-4, 16
# per family: RotaryEmbed layers (q and k per layer; GPT-BigCode has learned positions), the norm layer type
FORM = {"llama": (4, "RMSNorm"), "mistral_window": (4, "RMSNorm"), "phi3": (4, "RMSNorm"), "gpt_neox": (4, "LayerNorm"), "gpt_bigcode": (0, "LayerNorm")}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out, cache = tmp_path_factory.mktemp("optimum"), {}

    def get(stem):
        if stem not in cache:
            assert main(["convert", str(FOLDER / MANIFEST[stem]["file"]), "-o", str(out), "-q"]) == 0
            param, bin_ = out / f"{stem}.ncnn.param", out / f"{stem}.ncnn.bin"
            cache[stem] = param, bin_, read_record(param)
        return cache[stem]
    return get


@pytest.mark.parametrize("stem", sorted(MANIFEST))
def test_optimum_decoder_generates_onnxruntimes_tokens(stem, converted):
    param, bin_, record = converted(stem)
    entry = MANIFEST[stem]
    io = decoder_io(record)
    reference = greedy(onnxruntime_step(FOLDER / entry["file"]), io, entry["prompt"], STEPS)
    assert reference.tokens == entry["tokens"][:STEPS] and len(set(reference.tokens)) >= 8
    step, io = file_step(param, bin_, load=load_ncnn)
    assert compare(reference, greedy(step, io, entry["prompt"], STEPS), RTOL) == []
    step, io = file_step(param, bin_, runner=NcnnRunner(threads=1))
    assert compare(reference, greedy(step, io, entry["prompt"], STEPS), RTOL) == []
    rotary, norm = FORM[entry["family"]]
    for path in (param, prompt_file(param)):
        types = [n.op for n in load_ncnn(path, bin_).graph.topological()]
        assert types.count("SDPA") == entry["layers"] and types.count("RotaryEmbed") == rotary, (path.name, types)
        assert types.count(norm) == 2 * entry["layers"] + 1
        assert not {"MatMul", "Softmax", "Tile", "MultiHeadAttention"} & set(types), (path.name, types)
        assert sum(t in ("Gemm", "InnerProduct") for t in types) >= 3 * entry["layers"] + 1


def test_rows_masked_everywhere_give_the_guarded_zeros(converted):
    """The NaN guard optimum's attention carries, Where(IsNaN(softmax), 0, softmax), is computed from
    the mask: a left-padded prompt whose first rows see only padding (every key masked) gives the
    logits onnxruntime gives at every row, in the interpreter and real ncnn (an SDPA without the guard
    gives NaN there, and the next layer spreads it to every row through the padded keys)."""
    stem = "llama_model"
    param, bin_, _ = converted(stem)
    prompt = prompt_file(param)
    record = read_record(prompt)
    ids = MANIFEST[stem]["prompt"]
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.array([[0, 0] + [1] * (len(ids) - 2)], np.int64),
             "position_ids": np.arange(len(ids), dtype=np.int64)[None]}
    io = decoder_io(read_record(param))
    empty = {name: np.zeros([0 if i == axis else (d or 1) for i, d in enumerate(shape)], np.float32)
             for name, (shape, axis) in io["caches"].items()}
    want = onnxruntime_step(FOLDER / MANIFEST[stem]["file"])({**feeds, **empty})["logits"][0]
    assert np.isfinite(want).all()
    for step in (interpreter_step(load_ncnn(prompt, bin_)), ncnn_step(prompt, bin_, record, NcnnRunner(threads=1))):
        got = np.asarray(step(feeds)["logits"]).reshape(want.shape)
        assert np.abs(got - want).max() <= RTOL * np.abs(want).max()

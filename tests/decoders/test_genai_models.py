"""onnxruntime-genai model-builder decoders (models/decoders_genai, scripts/export_genai.py) convert to
ncnn's LLM form and generate as onnxruntime does: a prompt of 5 tokens, a chunk of 3 tokens on a
past, then single tokens, each step's cache carried from our own previous outputs, in the real ncnn
runtime (a child process) and the interpreter."""
from __future__ import annotations

from collections import Counter

import pytest

from converter.ncnn_side.runtime import NcnnRunner

from .genai_loop import MODELS, Pair, generate

NAMES = sorted(p.stem for p in MODELS.glob("*.onnx"))


@pytest.fixture(scope="module")
def runner():
    r = NcnnRunner(threads=1)
    yield r
    r.close()


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    cache = {}

    def get(name: str) -> Pair:
        if name not in cache:
            cache[name] = Pair(MODELS / f"{name}.onnx", tmp_path_factory.mktemp(name))
        return cache[name]
    return get


def test_models_are_committed():
    assert {"qwen2_fp32", "qwen2_int4"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", ["ncnn", "interpreter"])
def test_generation_matches_onnxruntime(name, backend, pairs, runner):
    pair = pairs(name)
    steps = generate(MODELS / f"{name}.onnx", pair, runner if backend == "ncnn" else None)
    assert [s["past"] for s in steps[:4]] == [0, 5, 6, 9]          # the past grows at run time
    for s in steps:
        assert s["tokens"][0] == s["tokens"][1], s
        for out, diff in s["diff"].items():
            assert diff <= 1e-4 * max(1.0, s["scale"][out]), (out, s)


@pytest.mark.parametrize("name", NAMES)
def test_ncnn_llm_form(name, pairs):
    """RMSNorm, RotaryEmbed, SDPA without its kv_cache, Gemm projections (block-quantized for int4),
    the cache concatenated in the graph; nothing of the mask's integer arithmetic."""
    pair = pairs(name)
    layers = Counter(n.op for n in pair.decode.graph.topological())
    n_layers = len(pair.pasts) // 2
    assert layers["SDPA"] == n_layers and layers["RotaryEmbed"] == 2 * n_layers
    # Qwen3 also normalizes each head's q and k
    assert layers["RMSNorm"] == (4 if "qwen3" in name else 2) * n_layers + 1 and layers["Concat"] == 2 * n_layers
    assert all(n.params.get(7, 0) == 0 for n in pair.decode.graph.topological() if n.op == "SDPA")
    gemms = [n for n in pair.decode.graph.topological() if n.op == "Gemm"]
    assert len(gemms) >= 4 * n_layers
    if "int4" in name:
        assert all(n.params.get(18, 0) // 100 == 4 for n in gemms)
    assert not {"Reduction", "Cast", "Softmax", "MatMul"} & set(layers)
    prompt_layers = Counter(n.op for n in pair.prompt.graph.topological())
    assert prompt_layers["Concat"] == 0 and not any(i.startswith("past") for i in pair.prompt.graph.inputs)

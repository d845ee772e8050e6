"""onnxruntime-genai model-builder decoders (models/decoders_genai, scripts/export_genai.py) convert to
ncnn's LLM form and generate as onnxruntime does: a prompt of 5 tokens, a chunk of 3 tokens on a
past, then single tokens, each step's cache carried from our own previous outputs, in the real ncnn
runtime (a child process) and the interpreter. The int4 models' MatMulNBits in each --block-quant
form: keep (exact), int8 (the default: within a stated deviation) and dequantize (exact)."""
from __future__ import annotations

import subprocess
import sys
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

    def get(name: str, block_quant: str = "keep") -> Pair:
        if (name, block_quant) not in cache:
            cache[name, block_quant] = Pair(MODELS / f"{name}.onnx", tmp_path_factory.mktemp(name), block_quant)
        return cache[name, block_quant]
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
    # the decode file (one token a call) keeps bias-free projections as InnerProducts, ncnn's one-row
    # kernel, on the bytes the prompt file's Gemms read (passes/convert_innerproduct_gemm.py)
    rows = [n for n in pair.decode.graph.topological() if n.op == "InnerProduct"]
    assert len(gemms) + len(rows) >= 4 * n_layers and not any(n.params.get(1) for n in rows)
    assert Counter(n.op for n in pair.prompt.graph.topological())["Gemm"] == len(gemms) + len(rows)
    if "int4" in name:
        assert not rows and all(n.params.get(18, 0) // 100 == 4 for n in gemms)
    else:
        assert len(rows) >= 3 * n_layers + 1         # o, gate, up, down (q/k/v where bias-free) and lm_head
    assert not {"Reduction", "Cast", "Softmax", "MatMul"} & set(layers)
    # each layer crops its cos/sin rows from a table of a row count ncnn does not pack (it would pack the
    # whole table anew for every Crop reading it)
    crops = [n for n in pair.decode.graph.topological() if n.op == "Crop" and n.name.endswith(("_cos", "_sin"))]
    assert len(crops) == 2 * n_layers
    assert all(pair.decode.graph.tensors[n.inputs[0]].ncnn_shape[0] % 4 for n in crops)
    prompt_layers = Counter(n.op for n in pair.prompt.graph.topological())
    assert prompt_layers["Concat"] == 0 and not any(i.startswith("past") for i in pair.prompt.graph.inputs)


INT8_LOGITS = 2e-2      # --block-quant int8: logits within this fraction of their largest magnitude


@pytest.mark.parametrize("name, block_quant", [("qwen2_int4", "int8"), ("llama_int4_b64", "int8"),
                                               ("qwen2_int4_tied", "dequantize")])
def test_block_quant_modes(name, block_quant, pairs, runner):
    """int8: every projection an int8 Gemm (18=2) and its channel scales (a BinaryOp); dequantize: float
    Gemms. Generated in real ncnn, against onnxruntime: the logits within INT8_LOGITS (int8) or 1e-4
    (dequantize) of their scale, and the same token wherever onnxruntime's best two logits are further
    apart than twice that."""
    pair = pairs(name, block_quant)
    nodes = pair.decode.graph.topological()
    gemms = [n for n in nodes if n.op in ("Gemm", "InnerProduct") and n.weights]    # float: InnerProducts
    assert len(gemms) == 11 and {n.params.get(18, 0) for n in gemms} == {2 if block_quant == "int8" else 0}
    if block_quant == "int8":
        consumers = {i: n for n in nodes for i in n.inputs}
        assert all(consumers[g.outputs[0]].op == "BinaryOp" and consumers[g.outputs[0]].params.get(0) == 2
                   for g in gemms)
    assert any(f"--block-quant {block_quant}" in note for note in pair.decode.stats["notes"])
    tolerance = INT8_LOGITS if block_quant == "int8" else 1e-4
    steps = generate(MODELS / f"{name}.onnx", pair, runner)
    for s in steps:
        assert s["diff"]["logits"] <= tolerance * s["scale"]["logits"], s
        if s["margin"] > 2 * tolerance * s["scale"]["logits"]:
            assert s["tokens"][0] == s["tokens"][1], s
    assert sum(s["tokens"][0] == s["tokens"][1] for s in steps) >= len(steps) - 1


def test_generated_check_allows_the_int8_deviation(pairs, tmp_path):
    """The <stem>_ncnn.py --generate --check of an int8 file compares at the stated deviation; exact
    files keep 1e-4."""
    from converter.verification.harness import harness_script
    path = MODELS / "qwen2_int4.onnx"
    texts = {mode: harness_script(pairs("qwen2_int4", mode).decode, tmp_path / "m.ncnn.param",
                                  tmp_path / "m.ncnn.bin", path, {}, {}) for mode in ("int8", "keep")}
    assert f"LOGITS_RTOL = {INT8_LOGITS!r}" in texts["int8"] and "LOGITS_RTOL = 0.0001" in texts["keep"]


PROMPT = [5, 77, 140, 9, 33]


def test_generated_check_generates_as_genai(tmp_path):
    """`onnx2ncnn convert` writes, beside the decode files, the prompt file (the past removed, on the
    same .bin: GroupQueryAttention reads no mask, so a placeholder cache row cannot be masked out), and
    `<stem>_ncnn.py --generate 12 --check` passes in real ncnn: equal tokens, logits within 1e-4 at every
    step, against onnxruntime fed as onnxruntime-genai feeds it. The interpreter, through
    converter.generation's pair_step, agrees as well."""
    from converter.api import load_ncnn
    from converter.cli import main
    from converter.generation import (compare, decoder_io, greedy, interpreter_step, onnxruntime_step,
                                      pair_step, prompt_file, read_record)
    name = "qwen3_fp32"
    assert main(["convert", str(MODELS / f"{name}.onnx"), "-o", str(tmp_path), "-q"]) == 0
    param = tmp_path / f"{name}.ncnn.param"
    prompt = prompt_file(param)
    assert prompt is not None and not any(e["onnx"].startswith("past") for e in read_record(prompt)["inputs"])
    assert sorted(p.name for p in tmp_path.glob("*.bin")) == [f"{name}.ncnn.bin"]      # one .bin for both
    done = subprocess.run([sys.executable, str(tmp_path / f"{name}_ncnn.py"), "--generate", "12", "--prompt",
                           ",".join(map(str, PROMPT)), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: 12 tokens equal to onnxruntime's, logits within 0.0001" in done.stdout
    io = decoder_io(read_record(param))
    reference = greedy(onnxruntime_step(MODELS / f"{name}.onnx"), io, PROMPT, 12)
    decode = interpreter_step(load_ncnn(param, param.with_suffix(".bin")))
    ours = greedy(pair_step(interpreter_step(load_ncnn(prompt, param.with_suffix(".bin"))), decode, io), io, PROMPT, 12)
    assert compare(reference, ours, 1e-4) == []


def test_one_token_decode_file(runner, tmp_path):
    """A decode file converted at one new token (input_ids 1 x 1, what a decode step feeds) holds its
    projections as InnerProducts, ncnn's one-row kernel (faster than Gemm's for one row in the real
    runtime: scripts/projection_forms.py), no Gemm; its step on a past of 5 gives onnxruntime's logits and
    present key/values in real ncnn and the interpreter."""
    import numpy as np
    import onnxruntime as ort

    import converter
    from converter.ncnn_side.layout import to_ncnn, to_onnx

    from .genai_loop import head_config, past_names
    path = MODELS / "qwen2_fp32.onnx"
    model = converter.convert(str(path), input_shapes={"input_ids": [1, 1]})
    layers = Counter(n.op for n in model.graph.topological())
    assert layers["InnerProduct"] == 11 and "Gemm" not in layers      # 5 per layer and the lm_head
    groups, dim = head_config(path)
    rng = np.random.default_rng(1)
    feeds = {"input_ids": np.array([[17]], np.int64), "attention_mask": np.ones((1, 6), np.int64),
             **{p: rng.standard_normal((1, groups, 5, dim)).astype(np.float32) for p in past_names(path)}}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    param, bin_ = tmp_path / "decode1.ncnn.param", tmp_path / "decode1.ncnn.bin"
    model.save(param, bin_)
    io = model.io()
    ins, outs = {e["onnx"]: e for e in io["inputs"]}, {e["ncnn"]: e for e in io["outputs"]}
    ours = {k: v.astype(np.float32) if k == "attention_mask" else v for k, v in feeds.items()}
    got = runner.run(param, bin_, {ins[k]["ncnn"]: to_ncnn(v, ins[k]) for k, v in ours.items() if k in ins},
                     list(outs), threads=1)
    for backend in ({outs[k]["onnx"]: to_onnx(v, outs[k]) for k, v in got.items()}, model.run(ours)):
        assert set(backend) == set(ref)
        for name, value in ref.items():
            assert np.abs(backend[name] - value).max() <= 1e-4 * max(1.0, np.abs(value).max()), name


def test_no_decode_file_is_left_without_its_prompt_file(tmp_path, monkeypatch, capsys):
    """When the prompt file cannot be made (here: its weights made to differ), convert exits 2 with one
    line and removes the decode files it wrote: they alone cannot start a generation."""
    from converter import batch_convert
    from converter.cli import main
    monkeypatch.setattr(batch_convert, "_same_bin", lambda *args: False)
    assert main(["convert", str(MODELS / "qwen3_fp32.onnx"), "-o", str(tmp_path), "-q"]) == 2
    assert "prompt file" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_generated_check_stops_at_a_near_tie(tmp_path):
    """--block-quant int8's logits may flip a near-tie: the script's --check compares logits up to the
    step where onnxruntime's best two are within twice the allowed deviation and the tokens part, says so,
    and passes (llama_int4_b64 with the default prompt parts at step 4); a token that differs where the
    margin is wider stays a MISMATCH (the check's other branch, unchanged)."""
    from converter.cli import main
    name = "llama_int4_b64"
    assert main(["convert", str(MODELS / f"{name}.onnx"), "-o", str(tmp_path), "-q"]) == 0
    done = subprocess.run([sys.executable, str(tmp_path / f"{name}_ncnn.py"), "--generate", "16", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tokens equal to onnxruntime's before step 4" in done.stdout and "MISMATCH" not in done.stdout


def test_verify_runs_onnxruntime_with_the_sequence_lengths():
    """verify's onnxruntime reference keeps GroupQueryAttention's seqlens_k / total_sequence_length (the
    conversion detaches them; onnxruntime refused the graph without them) and feeds a mask of ones, what
    the files assume: the fp32 model and the int4 one dequantized pass, layer by layer, in both backends."""
    import converter
    for name, mode in (("qwen2_fp32", "int8"), ("llama_int4_b64", "dequantize")):
        report = converter.verify(str(MODELS / f"{name}.onnx"), backend="both", block_quant=mode)
        assert report.passed, (name, [o for o in report.outputs if not o.passed])

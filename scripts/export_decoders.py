"""Export small decoder-only LLMs (transformers configs, random weights, no model hub) to ONNX in
optimum's layout, with a run-time cache length, by both torch exporters:

    /work/zoo-venv/bin/python scripts/export_decoders.py [--out models/decoders] [NAME ...]

Inputs input_ids (1, T), attention_mask (1, P+T), position_ids (1, T),
past_key_values.N.key / .value (1, KV_HEADS, P, HEAD_DIM); outputs logits (1, T, VOCAB) and
present.N.key / .value (1, KV_HEADS, P+T, HEAD_DIM). T and P are dynamic: one file prefills
(P = 0) and decodes (T = 1). Weights are re-drawn (export_zoo.randomize) and the output head is
rescaled so that logits span about +-8 and greedy generation from a short prompt gives many
different tokens (checked before a file is saved, with onnxruntime, as is the agreement of the
ONNX file with torch at every step). Writes models/decoders/<name>_<exporter>.onnx and
manifest.json (layout, heads, the prompt and onnxruntime's greedy tokens).

variants() adds other families and configs (scaled rotary, tied head, sliding windows of 16,
Gemma2's softcapping, Granite's multipliers, OLMo2, Cohere, GLM, Phi3, StableLM, GPT-NeoX, odd head
counts, one kv head): name them to export them, e.g. `--out /tmp/variants gemma2 cohere`; only those
that exercise a path the committed files do not are committed (docs/decoders.md lists the rest)."""
from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.export_zoo import randomize, strip_debug_info  # noqa: E402

import transformers  # noqa: E402
from transformers.cache_utils import DynamicCache  # noqa: E402

VOCAB, LAYERS = 256, 2
PROMPT = [5, 77, 140, 31, 250, 9]     # token ids < VOCAB
GENERATE = 32


def configs() -> dict:
    """name -> (config class name, kwargs): grouped-query heads, partial rotary, qk norms."""
    common = dict(vocab_size=VOCAB, num_hidden_layers=LAYERS, max_position_embeddings=256,
                  attn_implementation="eager", use_cache=True)
    out = {
        "qwen2": ("Qwen2Config", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                       num_key_value_heads=2, tie_word_embeddings=False)),
        "qwen3": ("Qwen3Config", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                       num_key_value_heads=2, head_dim=16)),
        "llama_gqa": ("LlamaConfig", dict(hidden_size=96, intermediate_size=128, num_attention_heads=6,
                                           num_key_value_heads=2)),
        "gemma3": ("Gemma3TextConfig", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                             num_key_value_heads=1, head_dim=16, sliding_window=512,
                                             layer_types=["sliding_attention", "full_attention"])),
        "phi": ("PhiConfig", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                   partial_rotary_factor=0.5)),
        "smollm3": ("SmolLM3Config", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                           num_key_value_heads=2, no_rope_layers=[1, 0], pad_token_id=None,
                                           bos_token_id=1, eos_token_id=2)),
    }
    out.update(variants())
    return {name: (cls, {**common, **kw}) for name, (cls, kw) in out.items() if hasattr(transformers, cls)}


# variants whose head stays tied to the embeddings: calibrate_head scales the final norm instead
TIED = {"llama_tied"}


def variants() -> dict:
    """Other families and config variations: scaled rotary frequencies, tied heads, sliding windows
    short enough that 32 generated tokens pass them, softcapping, multipliers, qk norms, fused
    projections, partial rotary with LayerNorm, odd head counts and one kv head."""
    llama = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
    small = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4)
    return {
        "llama_rope_llama3": ("LlamaConfig", dict(llama, rope_scaling=dict(
            rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_position_embeddings=64))),
        "llama_rope_linear": ("LlamaConfig", dict(llama, rope_scaling=dict(rope_type="linear", factor=4.0))),
        "llama_rope_dynamic": ("LlamaConfig", dict(llama, rope_scaling=dict(rope_type="dynamic", factor=2.0))),
        "llama_tied": ("LlamaConfig", dict(llama, tie_word_embeddings=True)),
        "llama_head_dim": ("LlamaConfig", dict(llama, head_dim=32)),           # head_dim != hidden / heads
        "llama_mqa_odd": ("LlamaConfig", dict(hidden_size=80, intermediate_size=128, num_attention_heads=5,
                                               num_key_value_heads=1)),       # 5 heads, one kv head
        "llama_odd": ("LlamaConfig", dict(hidden_size=48, intermediate_size=96, num_attention_heads=3,
                                           num_key_value_heads=3)),
        "mistral_sw": ("MistralConfig", dict(llama, sliding_window=16)),
        "qwen2_sw": ("Qwen2Config", dict(llama, use_sliding_window=True, sliding_window=16, max_window_layers=1,
                                          tie_word_embeddings=False)),
        "gemma2": ("Gemma2Config", dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=16, sliding_window=512,
                                         query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                                         final_logit_softcapping=10.0)),
        "granite": ("GraniteConfig", dict(llama, embedding_multiplier=3.0, attention_multiplier=0.2,
                                           residual_multiplier=0.5, logits_scaling=2.0)),
        "olmo2": ("Olmo2Config", dict(llama)),
        "cohere": ("CohereConfig", dict(llama, use_qk_norm=False, logit_scale=0.5)),
        "glm": ("GlmConfig", dict(llama, head_dim=16, partial_rotary_factor=0.5, pad_token_id=0)),
        "phi3": ("Phi3Config", dict(llama, pad_token_id=0)),
        "stablelm": ("StableLmConfig", dict(small, num_key_value_heads=4, partial_rotary_factor=0.25, qk_layernorm=True,
                                             use_parallel_residual=False)),
        "gpt_neox": ("GPTNeoXConfig", dict(small, rotary_pct=0.25, use_parallel_residual=True)),
    }


class Step(nn.Module):
    """One call in optimum's layout: flat past tensors in, logits and flat present tensors out."""

    def __init__(self, model, layers):
        super().__init__()
        self.model, self.layers = model, layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = DynamicCache(config=self.model.config)
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
        present = []
        for i in range(self.layers):
            layer = out.past_key_values.layers[i]
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def build(name: str, seed: int):
    cls, kw = configs()[name]
    cfg = getattr(transformers, cls)(**kw)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    randomize(model, seed)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    return model, cfg, kv_heads, head_dim


def names(layers):
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids", *past], ["logits", *present]


def torch_step(step, f):
    """One call of the wrapper on numpy feeds (the reference for the ONNX file)."""
    with torch.no_grad():
        out = step(*[torch.from_numpy(v) for v in f.values()])
    return [o.numpy() for o in out]


def feeds(ids, past, kv_heads, head_dim, layers, position=None):
    """One call's inputs, `position` tokens before these (the history: a sliding layer's past is cut
    shorter, so it is not the past's length); the mask spans the history and these, as generate() feeds it."""
    p = (0 if past is None else past[0].shape[2]) if position is None else position
    t = len(ids)
    if past is None:
        past = [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * (2 * layers)
    inputs = names(layers)[0]
    values = [np.array([ids], np.int64), np.ones((1, p + t), np.int64), np.arange(p, p + t, dtype=np.int64)[None]]
    return dict(zip(inputs, values + list(past)))


def generate(run, kv_heads, head_dim, layers, steps=GENERATE):
    """Greedy tokens and logits by a step function run(feeds) -> [logits, *present]."""
    out = run(feeds(PROMPT, None, kv_heads, head_dim, layers))
    tokens, logits = [], []
    for _ in range(steps):
        logits.append(out[0][0, -1])
        tokens.append(int(np.argmax(out[0][0, -1])))
        out = run(feeds([tokens[-1]], out[1:], kv_heads, head_dim, layers, position=len(PROMPT) + len(tokens) - 1))
    return tokens, np.array(logits)


def calibrate_head(model, step, kv_heads, head_dim, layers, seed, name, target=8.0):
    """Scale the output head so that the prompt's last logits have max |logit| ~ target. A tied
    head is untied (scaling it would scale the embeddings) and re-drawn: with embeddings that
    dominate the residual (Gemma's sqrt(hidden) scale) a tied head predicts the last token again."""
    def run(f):
        return torch_step(step, f)
    head = model.get_output_embeddings()
    if model.config.tie_word_embeddings and name in TIED:      # the head stays the embeddings: scale the norm before it
        head = model.model.norm
        with torch.no_grad():       # small embeddings, so that the layers (not the token itself) lead the residual
            model.get_input_embeddings().weight.mul_(0.05)
    elif model.config.tie_word_embeddings:
        gen = torch.Generator().manual_seed(seed)
        head.weight = nn.Parameter(torch.randn(head.weight.shape, generator=gen))
        model.config.tie_word_embeddings = False
    logits = run(feeds(PROMPT, None, kv_heads, head_dim, layers))[0][0, -1]
    with torch.no_grad():
        head.weight.mul_(target / np.abs(logits).max())
        if getattr(head, "bias", None) is not None:
            head.bias.mul_(target / np.abs(logits).max())
    return generate(run, kv_heads, head_dim, layers)


def export(step, path: Path, layers, kv_heads, head_dim, dynamo: bool):
    inputs, outputs = names(layers)
    past = [torch.randn(1, kv_heads, 3, head_dim) for _ in range(2 * layers)]
    args = (torch.tensor([[1, 2]]), torch.ones(1, 5, dtype=torch.int64), torch.tensor([[3, 4]]), *past)
    kwargs = dict(input_names=inputs, output_names=outputs, opset_version=18 if dynamo else 17, dynamo=dynamo)
    if dynamo:
        d = torch.export.Dim.DYNAMIC     # the exporter relates mask = past + seq itself
        shapes = ({1: d}, {1: d}, {1: d}, tuple({2: d} for _ in past))   # *past is one argument
        kwargs.update(external_data=False, dynamic_shapes=shapes)
    else:
        axes = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "position_ids": {1: "seq"}}
        axes.update({n: {2: "past"} for n in inputs[3:]})
        axes.update({n: {2: "total"} for n in outputs[1:]})
        axes["logits"] = {1: "seq"}
        kwargs["dynamic_axes"] = axes
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        stdout, sys.stdout = sys.stdout, io.StringIO()
        try:
            torch.onnx.export(step, args, str(path), **kwargs)
        finally:
            sys.stdout = stdout
    strip_debug_info(path)


def ort_run(path: Path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return lambda f: sess.run(None, f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "decoders")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    failed = []
    for seed, name in enumerate(configs()):
        if args.names and name not in args.names:
            continue
        for draw in (seed, seed + 100, seed + 200):      # the first draw whose generation varies
            model, cfg, kv_heads, head_dim = build(name, draw + 1)
            step = Step(model, LAYERS).eval()
            tokens, logits = calibrate_head(model, step, kv_heads, head_dim, LAYERS, draw, name)
            distinct = len(set(tokens))
            if distinct >= 8:
                break
        else:
            print(f"{name}: greedy generation gives only {distinct} distinct tokens: {tokens}")
            failed.append(name)
            continue
        for exporter, dynamo in (("ts", False), ("dynamo", True)):
            path = args.out / f"{name}_{exporter}.onnx"
            try:
                export(step, path, LAYERS, kv_heads, head_dim, dynamo)
                got_tokens, got_logits = generate(ort_run(path), kv_heads, head_dim, LAYERS)
            except Exception as e:       # an exporter that cannot take the model: say so, go on
                print(f"{name}_{exporter}: not exported: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                path.unlink(missing_ok=True)
                manifest.pop(path.stem, None)
                continue
            err = float(np.abs(got_logits - logits).max())
            if got_tokens != tokens or err > 1e-3:
                print(f"{name}_{exporter}: onnxruntime differs from torch (max |dlogit| {err:.2e})")
                path.unlink()
                return 1
            ops = sorted({n.op_type for n in onnx.load(str(path)).graph.node})
            manifest[path.stem] = dict(
                file=path.name, family=name, exporter=exporter, layers=LAYERS, kv_heads=kv_heads,
                heads=cfg.num_attention_heads, head_dim=head_dim, vocab=VOCAB, prompt=PROMPT,
                tokens=tokens, logits_range=[float(logits.min()), float(logits.max())],
                bytes=path.stat().st_size, ops=ops)
            print(f"{path.stem}: {path.stat().st_size // 1024} KiB, {distinct} distinct tokens, "
                  f"torch vs onnxruntime {err:.1e}")
            manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Export small decoder-only LLMs with Hugging Face optimum's own exporter (`optimum.exporters.onnx
.main_export`, task text-generation-with-past): transformers configs, every weight re-drawn, the head
rescaled so that greedy generation gives many different tokens, saved with save_pretrained to a
temporary folder (no model hub), then exported as optimum exports it:

    <venv>/bin/python scripts/export_optimum_decoders.py [--out models/decoders_optimum] [NAME ...]

optimum-onnx 0.1.0 writes one model.onnx per decoder (input_ids, attention_mask, position_ids where
the family has them, past_key_values.N.key/value -> logits, present.N.key/value), taking an empty
past for the prompt; `--no-post-process` only skips its weight deduplication (no separate
decoder_model / decoder_with_past_model files any more: those, and the merged file, come from older
optimum releases; scripts/export_merged.py builds a merged file with optimum's merge_decoders). Each
file's greedy tokens from onnxruntime must equal torch's (logits within 1e-3) and give >= 8 distinct
tokens before it is saved as <name>_model.onnx; manifest.json records the prompt and those tokens.
Families that optimum exports but the converter refuses are listed in docs/decoders.md.

optimum-onnx 0.1.0 needs transformers < 4.58 and optimum 2.1: in a venv beside /work/zoo-venv (torch
from there), e.g.
    /work/zoo-venv/bin/python -m venv --without-pip V; SP=V/lib/python3.11/site-packages
    /work/zoo-venv/bin/pip install --no-deps --target $SP transformers==4.57.6 optimum==2.1.0 \\
        optimum-onnx==0.1.0 huggingface_hub==0.36.0 tokenizers==0.22.1
    echo /work/zoo-venv/lib/python3.11/site-packages > $SP/zz_zoo.pth
    echo "import sys; sys.modules['diffusers'] = None" > $SP/aa_nodiffusers.pth   # wants a newer hub
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import warnings
from contextlib import redirect_stdout, redirect_stderr
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

VOCAB, LAYERS = 256, 2
PROMPT = [5, 77, 140, 31, 250, 9]
GENERATE = 32


def configs() -> dict:
    """name -> (config class, kwargs): small (hidden 64-128, 2 layers, vocab 256), untied heads."""
    small = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4)
    out = {
        "llama": ("LlamaConfig", dict(hidden_size=96, intermediate_size=128, num_attention_heads=6, num_key_value_heads=2)),
        "mistral": ("MistralConfig", dict(small, num_key_value_heads=2, sliding_window=4096)),
        "qwen2": ("Qwen2Config", dict(small, num_key_value_heads=2)),
        "qwen3": ("Qwen3Config", dict(small, num_key_value_heads=2, head_dim=16)),
        "phi3": ("Phi3Config", dict(small, num_key_value_heads=2, pad_token_id=0)),
        "gemma": ("GemmaConfig", dict(small, num_key_value_heads=1, head_dim=16)),
        "gemma2": ("Gemma2Config", dict(small, num_key_value_heads=2, head_dim=16, sliding_window=4096)),
        "gpt2": ("GPT2Config", dict(n_embd=64, n_head=4, n_inner=128, n_positions=256)),
        "gpt_neox": ("GPTNeoXConfig", dict(small, rotary_pct=0.25, use_parallel_residual=True)),
        "opt": ("OPTConfig", dict(hidden_size=64, ffn_dim=128, num_attention_heads=4, word_embed_proj_dim=64)),
        "bloom": ("BloomConfig", dict(hidden_size=64, n_head=4)),
        "falcon": ("FalconConfig", dict(hidden_size=64, num_attention_heads=4, multi_query=True, parallel_attn=True,
                                         new_decoder_architecture=False, alibi=False, bias=False)),
        "stablelm": ("StableLmConfig", dict(small, num_key_value_heads=2, partial_rotary_factor=0.25)),
        "granite": ("GraniteConfig", dict(small, num_key_value_heads=2, embedding_multiplier=2.0,
                                           attention_multiplier=0.3, residual_multiplier=0.5, logits_scaling=2.0)),
        "olmo": ("OlmoConfig", dict(small, num_key_value_heads=4)),
        "olmo2": ("Olmo2Config", dict(small, num_key_value_heads=2)),
        "smollm3": ("SmolLM3Config", dict(small, num_key_value_heads=2, no_rope_layers=[1, 0], pad_token_id=None,
                                           bos_token_id=1, eos_token_id=2)),
        "cohere": ("CohereConfig", dict(small, num_key_value_heads=2)),
        "helium": ("HeliumConfig", dict(small, num_key_value_heads=2, head_dim=16)),
        "gptj": ("GPTJConfig", dict(n_embd=64, n_head=4, n_inner=128, rotary_dim=8, n_positions=256)),
        "codegen": ("CodeGenConfig", dict(n_embd=64, n_head=4, n_inner=128, rotary_dim=8, n_positions=256, n_ctx=256)),
        "gpt_neo": ("GPTNeoConfig", dict(hidden_size=64, num_heads=4, intermediate_size=128, max_position_embeddings=256,
                                          attention_types=[[["global", "local"], 1]], window_size=256)),
        "gpt_bigcode": ("GPTBigCodeConfig", dict(n_embd=64, n_head=4, n_inner=128, n_positions=256, multi_query=True)),
        "nemotron": ("NemotronConfig", dict(small, num_key_value_heads=2, partial_rotary_factor=0.5, head_dim=16)),
        "arcee": ("ArceeConfig", dict(small, num_key_value_heads=2)),
        "glm": ("GlmConfig", dict(small, num_key_value_heads=2, head_dim=16, pad_token_id=0)),
        "mpt": ("MptConfig", dict(d_model=64, n_heads=4, expansion_ratio=2, max_seq_len=256)),
        # a window shorter than a generation (6 + 32 tokens): the mask hides the oldest keys
        "mistral_window": ("MistralConfig", dict(small, num_key_value_heads=2, sliding_window=8)),
    }
    common = dict(vocab_size=VOCAB, num_hidden_layers=LAYERS, n_layer=LAYERS, max_position_embeddings=256,
                  tie_word_embeddings=False, use_cache=True)
    result = {}
    for name, (cls, kw) in out.items():
        if hasattr(transformers, cls):
            result[name] = (cls, {**common, **kw})
    return result


def build(name: str, seed: int):
    cls, kw = configs()[name]
    cfg = getattr(transformers, cls)(**kw)
    if name == "mpt":
        cfg.n_layers = LAYERS
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    randomize(model, seed)
    return model


def torch_greedy(model, steps=GENERATE):
    """Greedy tokens and last-position logits by the model's own cache (the reference)."""
    ids, past, tokens, logits = torch.tensor([PROMPT]), None, [], []
    mask = torch.ones(1, len(PROMPT), dtype=torch.int64)
    with torch.no_grad():
        for _ in range(steps):
            out = model(input_ids=ids, attention_mask=mask, past_key_values=past, use_cache=True)
            logits.append(out.logits[0, -1].numpy())
            tokens.append(int(out.logits[0, -1].argmax()))
            past, ids = out.past_key_values, torch.tensor([[tokens[-1]]])
            mask = torch.ones(1, mask.shape[1] + 1, dtype=torch.int64)
    return tokens, np.array(logits)


def calibrate_head(model, target=8.0):
    head = model.get_output_embeddings()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([PROMPT])).logits[0, -1].numpy()
        scale = target / np.abs(logits).max()
        head.weight.mul_(scale)
        if getattr(head, "bias", None) is not None:
            head.bias.mul_(scale)
    return torch_greedy(model)


def session(path: Path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def feeds_for(sess, ids, past, position):
    """optimum's inputs: input_ids, attention_mask (past + new), position_ids where the file has
    them, past_key_values.* (an empty past: the file's own shape with 0 rows)."""
    names = {i.name: i for i in sess.get_inputs()}
    t = len(ids)
    p = 0 if not past else next(iter(past.values())).shape[2]
    f = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, p + t), np.int64)}
    if "position_ids" in names:
        f["position_ids"] = np.arange(position, position + t, dtype=np.int64)[None]
    for name, i in names.items():
        if name.startswith("past_key_values"):
            if past:
                f[name] = past[name]
            else:
                shape = [0 if isinstance(d, str) and "past" in d.lower() else (1 if isinstance(d, str) else d)
                         for d in i.shape]
                f[name] = np.zeros(shape, np.float32)
    return {k: v for k, v in f.items() if k in names}


def ort_greedy(first: Path, rest: Path, steps=GENERATE):
    """onnxruntime's greedy tokens: the prompt through `first` (an empty past where it takes one),
    then one token a call through `rest`, present.* fed back as past_key_values.*."""
    s0, s1 = session(first), session(rest)
    outs = [o.name for o in s1.get_outputs()]
    ids, past, position, tokens, logits = list(PROMPT), None, 0, [], []
    for k in range(steps):
        sess = s0 if k == 0 else s1
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds_for(sess, ids, past, position))))
        last = got["logits"][0, -1]
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        past = {n.replace("present", "past_key_values"): got[n] for n in outs if n.startswith("present")}
        position, ids = position + len(ids), [tokens[-1]]
    return tokens, np.array(logits)


def export(model, name: str, form: str, work: Path) -> tuple[Path, Path]:
    from optimum.exporters.onnx import main_export
    folder = work / name
    if not folder.exists():
        model.save_pretrained(folder)
    out = work / f"{name}_{form}"
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        main_export(str(folder), output=str(out), task="text-generation-with-past", do_validation=False)
    return out / "model.onnx", out / "model.onnx"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "decoders_optimum")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed, name in enumerate(configs()):
            if args.names and name not in args.names:
                continue
            try:
                model = build(name, seed + 101)
                tokens, logits = calibrate_head(model)
            except Exception as e:
                print(f"{name}: not built: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                failed += 1
                continue
            if len(set(tokens)) < 8:
                print(f"{name}: only {len(set(tokens))} distinct greedy tokens")
                failed += 1
                continue
            for form in ("model",):
                stem = f"{name}_{form}"
                try:
                    first, rest = export(model, name, form, Path(tmp))
                    got, got_logits = ort_greedy(first, rest)
                except Exception as e:
                    print(f"{stem}: not exported: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
                    failed += 1
                    continue
                err = float(np.abs(got_logits - logits).max())
                if got != tokens or err > 1e-3:
                    print(f"{stem}: onnxruntime differs from torch (max |dlogit| {err:.2e})")
                    failed += 1
                    continue
                path = args.out / f"{stem}.onnx"
                shutil.copy(rest, path)
                strip_debug_info(path)
                ops = sorted({n.op_type for n in onnx.load(str(path)).graph.node})
                manifest[stem] = dict(file=path.name, family=name, exporter=f"optimum-{form}", layers=LAYERS,
                                      vocab=VOCAB, prompt=PROMPT, tokens=tokens, bytes=path.stat().st_size, ops=ops)
                print(f"{stem}: {path.stat().st_size // 1024} KiB, {len(set(tokens))} distinct tokens, "
                      f"torch vs onnxruntime {err:.1e}")
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

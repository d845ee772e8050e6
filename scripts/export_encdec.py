"""Export small encoder-decoder models (Whisper, T5, TrOCR, BART, Marian) as users deploy them:
an encoder, and the decoder as optimum lays it out, a pair of steps:

- `<name>_decoder_<exp>.onnx`: the first step, no past. input_ids (1, T), encoder_hidden_states
  (1, S, D) [, encoder_attention_mask (1, S)] -> logits, present.N.decoder.key/value (the self
  cache, T long) and present.N.encoder.key/value (the cross cache, computed once here);
- `<name>_decoder_with_past_<exp>.onnx`: every later step. input_ids (1, 1)
  [, encoder_attention_mask], past_key_values.N.decoder.key/value (1, H, P, d) with P a run-time
  length, past_key_values.N.encoder.key/value (1, H, S, d) -> logits, present.N.decoder.key/value
  (P + 1 long). The cross cache is fed back unchanged at every step.

    /work/zoo-venv/bin/python scripts/export_encdec.py [--out models/encdec] [NAME ...]

Needs torch and transformers (a tools venv, not a project dependency); models are built from
configs with random weights, no hub. Every weight is re-drawn at a scale that keeps activations
O(1) and spreads the logits (std > 1), and greedy decoding in torch (full recompute, no cache)
must give varied tokens, else a token-by-token comparison proves little. Both torch exporters
(`ts`: TorchScript with dynamic_axes, `dynamo`: torch.export with dynamic_shapes) where they
export; onnxruntime on each file must reproduce torch. Writes manifest.json: files, inputs, the
prompt, the encoder input's seed and shape, and torch's greedy tokens."""
from __future__ import annotations

import argparse
import io
import json
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from export_zoo import strip_debug_info  # noqa: E402

VOCAB, D, HEADS, LAYERS, SRC = 64, 64, 4, 2, 12
STEPS = 32                    # tokens generated after the prompt


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=D, encoder_layers=LAYERS, decoder_layers=LAYERS,
                        encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=D,
                        decoder_ffn_dim=D, max_source_positions=SRC, max_target_positions=48,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager", tie_word_embeddings=False)
    model = WhisperForConditionalGeneration(cfg)
    enc_input = ("input_features", [1, 16, 2 * SRC], "float32")
    return model, enc_input, None, [1, 5, 7, 9]     # Whisper's forced prompt: sot, language, task, notimestamps


def t5():
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=VOCAB, d_model=D, d_kv=16, d_ff=D, num_layers=LAYERS, num_decoder_layers=LAYERS,
                   num_heads=HEADS, relative_attention_num_buckets=8, relative_attention_max_distance=20,
                   dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                   attn_implementation="eager", tie_word_embeddings=False)
    return T5ForConditionalGeneration(cfg), ("input_ids", [1, SRC], "int64"), "attention_mask", [0]


def trocr():
    from transformers import TrOCRConfig, TrOCRForCausalLM, ViTConfig, ViTModel, VisionEncoderDecoderModel
    enc = ViTModel(ViTConfig(hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                             intermediate_size=D, image_size=32, patch_size=8, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0, attn_implementation="eager"), add_pooling_layer=False)
    dec = TrOCRForCausalLM(TrOCRConfig(vocab_size=VOCAB, d_model=D, decoder_layers=LAYERS,
                                       decoder_attention_heads=HEADS, decoder_ffn_dim=D, max_position_embeddings=48,
                                       cross_attention_hidden_size=D, dropout=0.0, attention_dropout=0.0,
                                       activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                       decoder_start_token_id=2, attn_implementation="eager", tie_word_embeddings=False))
    model = VisionEncoderDecoderModel(encoder=enc, decoder=dec)
    return model, ("pixel_values", [1, 3, 32, 32], "float32"), None, [2]


def bart():
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(vocab_size=VOCAB, d_model=D, encoder_layers=LAYERS, decoder_layers=LAYERS,
                     encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=D,
                     decoder_ffn_dim=D, max_position_embeddings=48, dropout=0.0, attention_dropout=0.0,
                     activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=2, forced_eos_token_id=None, attn_implementation="eager", tie_word_embeddings=False)
    return BartForConditionalGeneration(cfg), ("input_ids", [1, SRC], "int64"), "attention_mask", [2]


def marian():
    from transformers import MarianConfig, MarianMTModel
    cfg = MarianConfig(vocab_size=VOCAB, d_model=D, encoder_layers=LAYERS, decoder_layers=LAYERS,
                       encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=D,
                       decoder_ffn_dim=D, max_position_embeddings=48, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0, pad_token_id=VOCAB - 1, eos_token_id=0,
                       decoder_start_token_id=VOCAB - 1, attn_implementation="eager", tie_word_embeddings=False)
    return MarianMTModel(cfg), ("input_ids", [1, SRC], "int64"), "attention_mask", [VOCAB - 1]


def whisper_h2l3():
    """Other heads and depths: 2 heads of 32, 3 decoder layers over 1 encoder layer."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=D, encoder_layers=1, decoder_layers=3,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=2 * D,
                        decoder_ffn_dim=2 * D, max_source_positions=SRC, max_target_positions=48,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager",
                        tie_word_embeddings=False)
    return WhisperForConditionalGeneration(cfg), ("input_features", [1, 16, 2 * SRC], "float32"), None, [1, 5, 7, 9]


def mt5():
    """T5 v1.1 / mT5: gated-gelu feed-forward, an untied head (no d_model ** -0.5 rescale)."""
    from transformers import MT5Config, MT5ForConditionalGeneration
    cfg = MT5Config(vocab_size=VOCAB, d_model=D, d_kv=16, d_ff=D, num_layers=LAYERS, num_decoder_layers=LAYERS,
                    num_heads=HEADS, relative_attention_num_buckets=8, relative_attention_max_distance=20,
                    dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                    feed_forward_proj="gated-gelu", attn_implementation="eager", tie_word_embeddings=False)
    return MT5ForConditionalGeneration(cfg), ("input_ids", [1, SRC], "int64"), "attention_mask", [0]


def mbart():
    """mBART: learned positions offset by 2, pre-norm layers with final LayerNorms, scaled embeddings."""
    from transformers import MBartConfig, MBartForConditionalGeneration
    cfg = MBartConfig(vocab_size=VOCAB, d_model=D, encoder_layers=LAYERS, decoder_layers=LAYERS,
                      encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=D,
                      decoder_ffn_dim=D, max_position_embeddings=48, dropout=0.0, attention_dropout=0.0,
                      activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2, scale_embedding=True,
                      decoder_start_token_id=2, forced_eos_token_id=None, attn_implementation="eager",
                      tie_word_embeddings=False)
    return MBartForConditionalGeneration(cfg), ("input_ids", [1, SRC], "int64"), "attention_mask", [2]


def trocr_sin():
    """TrOCR with sinusoidal positions and scaled embeddings, no embedding LayerNorm."""
    model, enc_input, mask, prompt = trocr()
    from transformers import TrOCRConfig, TrOCRForCausalLM, VisionEncoderDecoderModel
    dec = TrOCRForCausalLM(TrOCRConfig(vocab_size=VOCAB, d_model=D, decoder_layers=LAYERS,
                                       decoder_attention_heads=HEADS, decoder_ffn_dim=D, max_position_embeddings=48,
                                       cross_attention_hidden_size=D, dropout=0.0, attention_dropout=0.0,
                                       activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                       decoder_start_token_id=2, use_learned_position_embeddings=False,
                                       scale_embedding=True, layernorm_embedding=False, attn_implementation="eager",
                                       tie_word_embeddings=False))
    return VisionEncoderDecoderModel(encoder=model.encoder, decoder=dec), enc_input, mask, prompt


MODELS = {"whisper": whisper, "t5": t5, "trocr": trocr, "bart": bart, "marian": marian,
          "whisper_h2l3": whisper_h2l3, "mt5": mt5, "mbart": mbart, "trocr_sin": trocr_sin}
# what models/encdec holds (the default); the other configs are exported when named (`--out DIR mt5`):
# they convert and generate exactly like these (docs/decoders.md), and each would add ~15 s of tests
COMMITTED = ("whisper", "t5", "trocr", "bart", "marian")
# the decoders of the first three with both exporters, BART's and Marian's with TorchScript (the
# committed files stay a few MB); every encoder with TorchScript (the encoders are not the point)
EXPORTERS = {"whisper": ("ts", "dynamo"), "t5": ("ts", "dynamo"), "trocr": ("ts", "dynamo"),
             "bart": ("ts",), "marian": ("ts",),
             "whisper_h2l3": ("ts", "dynamo"), "mt5": ("ts", "dynamo"), "mbart": ("ts", "dynamo"),
             "trocr_sin": ("ts", "dynamo")}


def randomize(model, seed: int) -> None:
    """Re-draw every weight: matrices ~ N(0, 1/fan_in) (times 2 for embeddings and the head, so the
    logits spread), norms' scales around 1, biases small; positional tables stay as built when
    they are fixed (sinusoidal) buffers."""
    gen = torch.Generator().manual_seed(seed)
    for m in (model, getattr(model, "decoder", None)):
        head = m.get_output_embeddings() if m is not None and hasattr(m, "get_output_embeddings") else None
        if head is not None and head.weight is m.get_input_embeddings().weight:
            # a head tied to the embeddings scores the input token itself highest: greedy repeats it
            head.weight = torch.nn.Parameter(head.weight.detach().clone())
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                scale = 1.0 / p.shape[-1] ** 0.5
                if "embed" in name or "shared" in name or "lm_head" in name or "proj_out" in name or "output_projection" in name:
                    scale = 1.5
                if "relative_attention_bias" in name:
                    scale = 1.0
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
            elif "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    model.eval()


def encoder_input(spec, seed: int) -> np.ndarray:
    name, shape, dtype = spec
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(3, VOCAB - 1, shape).astype(np.int64)
    return rng.uniform(-1, 1, shape).astype(np.float32)


def encoder_module(model, kind: str, has_mask: bool):
    enc = model.get_encoder()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, x, mask=None):
            return self.enc(x, attention_mask=mask).last_hidden_state if has_mask else self.enc(x).last_hidden_state
    return Encoder()


def decoder_call(model, kind, ids, enc, mask, cache):
    """logits and the cache after one decoder call (HF modules, as optimum wraps them)."""
    if kind.startswith("trocr"):
        out = model.decoder(input_ids=ids, encoder_hidden_states=enc, cache=cache, use_cache=True)
    else:
        out = model(decoder_input_ids=ids, encoder_outputs=(enc,), attention_mask=mask,
                    cache=cache, use_cache=True)
    return out.logits, getattr(out, "cache", None) or out.past_key_values


class DecoderStep(torch.nn.Module):
    """optimum's decoder (with_past False) or decoder_with_past, flat tensors in and out."""

    def __init__(self, model, kind: str, has_mask: bool, with_past: bool):
        super().__init__()
        self.model, self.kind, self.has_mask, self.with_past = model, kind, has_mask, with_past

    def forward(self, *args):
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache
        args = list(args)
        ids = args.pop(0)
        enc = None if self.with_past else args.pop(0)
        mask = args.pop(0) if self.has_mask else None
        if self.with_past:
            n = len(args) // 4
            self_kv = [(args[4 * i], args[4 * i + 1]) for i in range(n)]
            cross_kv = [(args[4 * i + 2], args[4 * i + 3]) for i in range(n)]
            cache = EncoderDecoderCache(DynamicCache(self_kv), DynamicCache(cross_kv))
            # the cross-attention layers take their keys from the cache; the modules still need a
            # hidden-states tensor to choose the cross-attention path (its values are not read)
            k = cross_kv[0][0]
            enc = k.new_zeros((k.shape[0], k.shape[2], D))
        else:
            cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        logits, cache = decoder_call(self.model, self.kind, ids, enc, mask, cache)
        outs = [logits]
        for i in range(len(cache.self_attention_cache.layers)):
            outs += [cache.self_attention_cache.layers[i].keys, cache.self_attention_cache.layers[i].values]
            if not self.with_past:
                outs += [cache.cross_attention_cache.layers[i].keys, cache.cross_attention_cache.layers[i].values]
        return tuple(outs)


def kv_names(prefix: str, with_cross: bool, layers: int = LAYERS) -> list[str]:
    names = []
    for i in range(layers):
        names += [f"{prefix}.{i}.decoder.key", f"{prefix}.{i}.decoder.value"]
        if with_cross:
            names += [f"{prefix}.{i}.encoder.key", f"{prefix}.{i}.encoder.value"]
    return names


def export(module, args, in_names, out_names, dynamic: dict, path: Path, dynamo: bool) -> None:
    kwargs = dict(input_names=in_names, output_names=out_names, opset_version=18 if dynamo else 17, dynamo=dynamo)
    if dynamo:
        kwargs["external_data"] = False
        dims = {}
        shapes = []
        for name in in_names:
            axes = dynamic.get(name, {})
            shapes.append({a: dims.setdefault(n, torch.export.Dim(n, min=1 if n != "past" else 1, max=64))
                           for a, n in axes.items() if n != "batch"} or None)
        # a DecoderStep takes *args: torch.export sees one argument, the tuple of them
        kwargs["dynamic_shapes"] = (tuple(shapes),) if isinstance(module, DecoderStep) else tuple(shapes)
    else:
        kwargs["dynamic_axes"] = {k: v for k, v in dynamic.items()}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        sink, stdout = io.StringIO(), sys.stdout
        sys.stdout = sink
        try:
            torch.onnx.export(module, tuple(args), str(path), **kwargs)
        finally:
            sys.stdout = stdout
    strip_debug_info(path)


def check_ort(path: Path, feeds: dict, expected: list, out_names: list) -> float:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(out_names, feeds)
    worst = 0.0
    for name, g, e in zip(out_names, got, expected):
        e = e.numpy()
        if g.shape != e.shape:
            raise ValueError(f"{path.name}: {name} shape {g.shape}, torch {e.shape}")
        worst = max(worst, float(np.abs(g - e).max() / (np.abs(e).max() + 1e-6)))
    if worst > 1e-4:
        raise ValueError(f"{path.name}: onnxruntime differs from torch by {worst:.2g} (relative)")
    return worst


def greedy_reference(model, kind, enc, mask, prompt) -> tuple[list[int], float]:
    """torch's greedy tokens by full recompute (no cache): what the step files must reproduce."""
    tokens = list(prompt)
    spread = []
    with torch.no_grad():
        for _ in range(STEPS):
            logits, _ = decoder_call(model, kind, torch.tensor([tokens]), enc, mask, None)
            spread.append(float(logits[0, -1].std()))
            tokens.append(int(logits[0, -1].argmax()))
    return tokens[len(prompt):], min(spread)


def build(name: str, out: Path) -> dict:
    for seed in range(sum(map(ord, name)), sum(map(ord, name)) + 16):      # the first draw that generates
        model, enc_spec, mask_name, prompt = MODELS[name]()
        randomize(model, seed=seed)
        has_mask = mask_name is not None
        cfg = model.config.decoder if hasattr(model.config, "decoder") else model.config
        layers = getattr(cfg, "decoder_layers", None) or cfg.num_decoder_layers
        heads = getattr(cfg, "decoder_attention_heads", None) or cfg.num_heads
        x = encoder_input(enc_spec, seed=7)
        mask = torch.ones(enc_spec[1], dtype=torch.int64) if has_mask else None
        if has_mask:
            mask[0, -3:] = 0           # a padded source: the encoder mask matters
        encoder = encoder_module(model, name, has_mask)
        with torch.no_grad():
            enc = encoder(torch.from_numpy(x), mask)
        tokens, spread = greedy_reference(model, name, enc, mask, prompt)
        if len(set(tokens)) >= 12 and spread >= 1.0:
            break
    else:
        raise ValueError(f"{name}: greedy tokens {tokens} (logit std {spread:.2f}) are too uniform to test")
    entry = {"encoder_input": {"name": enc_spec[0], "shape": enc_spec[1], "dtype": enc_spec[2], "seed": 7},
             "encoder_attention_mask": mask.tolist() if has_mask else None, "prompt": prompt,
             "greedy_tokens": tokens, "weights_seed": seed, "layers": layers, "heads": heads, "files": {}, "refused": {}}

    # encoder
    enc_in = [enc_spec[0]] + ([mask_name] if has_mask else [])
    enc_dyn = {n: {0: "batch", 1: "src"} for n in enc_in} if enc_spec[2] == "int64" else {enc_spec[0]: {0: "batch"}}
    enc_dyn["last_hidden_state"] = {0: "batch", 1: "src"} if enc_spec[2] == "int64" else {0: "batch"}
    enc_args = [torch.from_numpy(x)] + ([mask] if has_mask else [])
    feeds_enc = {n: a.numpy() for n, a in zip(enc_in, enc_args)}

    # first decoder step: the prompt, no past (exported at 5 tokens: an extent of 1 would be
    # specialized by torch.export)
    ids = torch.tensor([(prompt + tokens)[:5]])
    step0 = DecoderStep(model, name, has_mask, with_past=False)
    in0 = ["input_ids", "encoder_hidden_states"] + (["encoder_attention_mask"] if has_mask else [])
    args0 = [ids, enc] + ([mask] if has_mask else [])
    out0 = ["logits"] + kv_names("present", True, layers)
    dyn0 = {"input_ids": {0: "batch", 1: "tgt"}, "encoder_hidden_states": {0: "batch", 1: "src"},
            "encoder_attention_mask": {0: "batch", 1: "src"}, "logits": {0: "batch", 1: "tgt"}}
    for n in kv_names("present", True, layers):
        dyn0[n] = {0: "batch", 2: "tgt" if ".decoder." in n else "src"}
    with torch.no_grad():
        ref0 = step0(*args0)
    present0 = dict(zip(out0, ref0))

    # later steps: one token, the self cache at a run-time length, the cross cache fixed
    step = DecoderStep(model, name, has_mask, with_past=True)
    in1 = ["input_ids"] + (["encoder_attention_mask"] if has_mask else []) + kv_names("past_key_values", True, layers)
    next_id = torch.tensor([[(prompt + tokens)[5]]])
    args1 = [next_id] + ([mask] if has_mask else []) + \
        [present0[n.replace("past_key_values", "present")] for n in kv_names("past_key_values", True, layers)]
    out1 = ["logits"] + kv_names("present", False, layers)
    dyn1 = {"input_ids": {0: "batch"}, "encoder_attention_mask": {0: "batch", 1: "src"}, "logits": {0: "batch"}}
    for n in kv_names("past_key_values", True, layers):
        dyn1[n] = {0: "batch", 2: "past" if ".decoder." in n else "src"}
    for n in kv_names("present", False, layers):
        dyn1[n] = {0: "batch", 2: "past_1"}
    with torch.no_grad():
        ref1 = step(*args1)

    fixed_src = enc_spec[2] != "int64"     # audio frames and images: the encoder length is the model's
    for exp in EXPORTERS[name]:
        dynamo = exp == "dynamo"
        jobs = [("encoder", encoder, enc_args, enc_in, ["last_hidden_state"], enc_dyn, feeds_enc)] if not dynamo else []
        jobs += [("decoder", step0, args0, in0, out0, dyn0, None),
                ("decoder_with_past", step, args1, in1, out1, dyn1, None)]
        for part, module, args, in_names, out_names, dyn, _ in jobs:
            if fixed_src:
                dyn = {k: {a: n for a, n in v.items() if n != "src"} for k, v in dyn.items()}
            if dynamo:   # torch.export names the dims itself; present's length is derived from past's
                dyn = {k: {a: n for a, n in v.items() if n not in ("batch",)} for k, v in dyn.items()
                       if k in in_names}
            path = out / f"{name}_{part}_{exp}.onnx"
            try:
                export(module, args, in_names, out_names, dyn, path, dynamo)
                with torch.no_grad():
                    expected = module(*args)
                expected = list(expected) if isinstance(expected, tuple) else [expected]
                feeds = {n: a.numpy() for n, a in zip(in_names, args)}
                check_ort(path, feeds, expected, out_names)
                entry["files"].setdefault(exp, {})[part] = path.name
            except Exception as exc:  # an exporter that cannot take a module: recorded, not fatal
                path.unlink(missing_ok=True)
                entry["refused"][f"{part}_{exp}"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                traceback.print_exc(limit=2, file=sys.stderr)
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "models" / "encdec"))
    parser.add_argument("names", nargs="*", default=list(COMMITTED))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for name in args.names:
        torch.manual_seed(0)
        manifest[name] = build(name, out)
        print(name, "files:", manifest[name]["files"], "refused:", list(manifest[name]["refused"]))
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")       # after each model
    return 0


if __name__ == "__main__":
    sys.exit(main())

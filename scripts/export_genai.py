"""Build small decoders with onnxruntime-genai's model builder, the way its users do, from a config
with random weights saved by transformers into a temporary folder (nothing from a model hub).

    /work/zoo-venv/bin/python scripts/export_genai.py [-o models/decoders_genai] [--only NAME]
    /work/zoo-venv/bin/python scripts/export_genai.py --big qwen2.5-0.5b -o /tmp/big   # benchmark size

Each model is written as <out>/<name>.onnx, weights inside (the builder's external data merged
back), beside the builder's genai_config.json as <name>.genai_config.json. The builder emits
com.microsoft GroupQueryAttention (packed QKV, its own rotary from cos/sin caches),
SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization and, for int4, MatMulNBits.
torch, transformers and onnxruntime-genai are tools of this script, never of the package.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
# name: (transformers config class, config overrides, builder precision, builder extra options)
MODELS = {
    "qwen2_fp32": ("Qwen2Config", {}, "fp32", []),
    # accuracy_level=1: onnxruntime computes MatMulNBits in fp32 on the dequantized weights, the
    # arithmetic ncnn's 4-bit block-quantized Gemm does; the builder's CPU default (4) quantizes
    # the activations to int8 per block first
    "qwen2_int4": ("Qwen2Config", {}, "int4", ["accuracy_level=1", "block_size=32"]),
    # tied embeddings: the builder's int4 embedding is a GatherBlockQuantized on the lm_head's weights
    "qwen2_int4_tied": ("Qwen2Config", {"tie_word_embeddings": True}, "int4", ["accuracy_level=1"]),
    "llama_fp32": ("LlamaConfig", {"rope_theta": 500000.0}, "fp32", []),
    "llama_int4_b64": ("LlamaConfig", {}, "int4", ["accuracy_level=1", "block_size=64"]),
    "qwen3_fp32": ("Qwen3Config", {"head_dim": 16}, "fp32", []),
}
BIG = {   # Qwen2.5-0.5B's shapes, random weights
    "qwen2.5-0.5b": ("Qwen2Config", dict(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                                          num_hidden_layers=24, num_attention_heads=14,
                                          num_key_value_heads=2, max_position_embeddings=32768,
                                          tie_word_embeddings=True, rope_theta=1000000.0)),
    # Llama-3.2-1B's shapes (1.24B parameters, ~5 GB in fp32): the conversion-memory bar's size
    "llama3.2-1b": ("LlamaConfig", dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                                         num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                                         max_position_embeddings=8192, tie_word_embeddings=True,
                                         rope_theta=500000.0)),
}


def checkpoint(folder: Path, cls_name: str, overrides: dict, small: bool = True) -> None:
    import torch
    import transformers
    config = getattr(transformers, cls_name)(**({**SMALL, **overrides} if small else overrides))
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():                 # random weights large enough that layers matter
        for p in model.parameters():
            if p.dim() == 1:
                p.normal_(1.0, 0.1)
    model.save_pretrained(folder)
    _tokenizer(folder, config.vocab_size)


def _tokenizer(folder: Path, vocab: int) -> None:
    """A word-level fast tokenizer of the config's vocabulary: the builder saves one beside the
    model, and would otherwise convert a slow one (needing sentencepiece)."""
    import tokenizers
    import transformers
    words = {f"t{i}": i for i in range(vocab)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(words, unk_token="t0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", eos_token="t1").save_pretrained(folder)


def build(folder: Path, out: Path, precision: str, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(folder), "-o", str(out),
           "-p", precision, "-e", "cpu", "-c", str(folder / "cache")]
    if extra:
        cmd += ["--extra_options", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"builder failed: {done.stderr.strip().splitlines()[-1:]}")


def export(name: str, cls_name: str, overrides: dict, precision: str, extra: list[str], out_dir: Path,
           small: bool = True, merge: bool = True) -> Path:
    import onnx
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        checkpoint(tmp / "ckpt", cls_name, overrides, small)
        build(tmp / "ckpt", tmp / "out", precision, extra)
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / f"{name}.onnx"
        if merge:
            onnx.save(onnx.load(tmp / "out" / "model.onnx"), target)
        else:                             # keep the builder's external data file beside it
            model = onnx.load(tmp / "out" / "model.onnx")
            onnx.save(model, target, save_as_external_data=True, location=f"{name}.onnx.data")
        shutil.copy(tmp / "out" / "genai_config.json", out_dir / f"{name}.genai_config.json")
    print(f"{target}  {target.stat().st_size / 1e3:.0f} kB")
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=Path(__file__).resolve().parent.parent / "models" / "decoders_genai")
    ap.add_argument("--only", action="append", help="build only these models")
    ap.add_argument("--big", choices=sorted(BIG), help="one realistic-size model, fp32 and int4, external data")
    args = ap.parse_args()
    if args.big:
        cls_name, cfg = BIG[args.big]
        export(f"{args.big}_fp32", cls_name, cfg, "fp32", [], args.out, small=False, merge=False)
        export(f"{args.big}_int4", cls_name, cfg, "int4", ["accuracy_level=1", "block_size=32"], args.out,
               small=False, merge=False)
        return
    for name, (cls_name, overrides, precision, extra) in MODELS.items():
        if not args.only or name in args.only:
            export(name, cls_name, overrides, precision, extra, args.out)


if __name__ == "__main__":
    main()

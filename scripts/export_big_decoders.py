"""Export decoder-only LLMs at a realistic size (a Qwen2.5-0.5B- or SmolLM-360M-shaped transformers
config, random weights, nothing from a model hub) the plain ways, for scripts/bench_decoders.py:

    /work/zoo-venv/bin/python scripts/export_big_decoders.py [-o /tmp/big] [--only qwen2.5-0.5b] \
        [--exporters ts,dynamo,optimum]

ts / dynamo: torch.onnx's two exporters in optimum's layout with a run-time cache length
(scripts/export_decoders.py's Step and export); optimum: `optimum-cli export onnx --task
text-generation-with-past` on a save_pretrained folder of the same model. Writes
<out>/<name>_<exporter>.onnx with its weights in <name>_<exporter>.onnx.data beside it (never commit
them: ~2 GB each). The final norm's scale is set so that the prompt's logits span about +-8 (the
embeddings are tied: scaling the head would scale them too)."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import scripts.export_decoders as small  # noqa: E402
from scripts.export_decoders import PROMPT, Step, torch_step  # noqa: E402
from scripts.export_genai import BIG  # noqa: E402
from scripts.export_zoo import randomize, without_debug_info  # noqa: E402

MODELS = {**BIG,
          "smollm-360m": ("LlamaConfig", dict(vocab_size=49152, hidden_size=960, intermediate_size=2560,
                                              num_hidden_layers=32, num_attention_heads=15, num_key_value_heads=5,
                                              max_position_embeddings=8192, tie_word_embeddings=True,
                                              rope_theta=100000.0))}


def build(name: str):
    import transformers
    cls, kw = MODELS[name]
    cfg = getattr(transformers, cls)(**kw, attn_implementation="eager", use_cache=True)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    randomize(model, 1)
    kv_heads, head_dim = cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
    step = Step(model, cfg.num_hidden_layers).eval()
    empty = [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * (2 * cfg.num_hidden_layers)
    logits = torch_step(step, PROMPT, empty)[0][0, -1]
    with torch.no_grad():
        model.model.norm.weight.mul_(8.0 / abs(logits).max())
    return model, step, cfg.num_hidden_layers, kv_heads, head_dim


def torch_export(step, path: Path, layers: int, kv_heads: int, head_dim: int, dynamo: bool) -> None:
    """export_decoders.export into a scratch folder (TorchScript writes a file per weight past 2 GB),
    then the graph without debug info and its weights in one <file>.data beside it."""
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        scratch = Path(tmp) / path.name
        strip, small.strip_debug_info = small.strip_debug_info, lambda p: None     # it saves without external data
        try:
            small.export(step, scratch, layers, kv_heads, head_dim, dynamo)
        finally:
            small.strip_debug_info = strip
        model = without_debug_info(onnx.load(str(scratch)))
        onnx.save(model, str(path), save_as_external_data=True, location=f"{path.name}.data")


def optimum_export(model, path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(Path(tmp) / "ckpt")
        done = subprocess.run([str(Path(sys.executable).with_name("optimum-cli")), "export", "onnx", "--model",
                               str(Path(tmp) / "ckpt"), "--task", "text-generation-with-past", str(Path(tmp) / "out")],
                              capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"optimum-cli failed: {done.stderr.strip().splitlines()[-3:]}")
        model = onnx.load(str(Path(tmp) / "out" / "model.onnx"))
        onnx.save(model, str(path), save_as_external_data=True, location=f"{path.name}.data")


def quantize_int4(source: Path, path: Path) -> None:
    """onnxruntime's own weight-only quantizer on a torch.onnx export, as its users make a 4-bit file:
    MatMulNBits, 4 bits, blocks of 32, symmetric, accuracy_level 1 (onnxruntime computes in fp32 on the
    dequantized weights, the arithmetic of ncnn's block-quantized Gemm)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), bits=4, block_size=32, is_symmetric=True, accuracy_level=1)
    quantizer.process()
    onnx.save(quantizer.model.model, str(path), save_as_external_data=True, location=f"{path.name}.data")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=Path("/tmp/big"))
    ap.add_argument("--only", action="append", choices=sorted(MODELS))
    ap.add_argument("--exporters", default="ts,dynamo,optimum",
                    help="also ts_int4: the ts file through onnxruntime's MatMulNBits quantizer (exported first if missing)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or ["qwen2.5-0.5b"]:
        model, step, layers, kv_heads, head_dim = build(name)
        for exporter in args.exporters.split(","):
            path = args.out / f"{name}_{exporter}.onnx"
            if exporter == "ts_int4":
                source = args.out / f"{name}_ts.onnx"
                if not source.exists():
                    torch_export(step, source, layers, kv_heads, head_dim, dynamo=False)
                quantize_int4(source, path)
            elif exporter == "optimum":
                optimum_export(model, path)
            else:
                torch_export(step, path, layers, kv_heads, head_dim, dynamo=exporter == "dynamo")
            print(f"{path}: {sum(f.stat().st_size for f in args.out.glob(path.name + '*')) / 1e9:.2f} GB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

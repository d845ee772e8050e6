"""Export small decoder-only LLMs as Hugging Face optimum's `decoder_model_merged.onnx`: the decoder
without past (prefill) and the decoder with past (decode) merged by optimum's own
`optimum.onnx.merge_decoders` into one file whose If on the `use_cache_branch` input picks the branch
(transformers configs, random weights, no model hub):

    /work/zoo-venv/bin/python scripts/export_merged.py [--out models/decoders_merged] [NAME ...]

Both halves are exported by torch.onnx (TorchScript, opset 17) in optimum's layout
(scripts/export_decoders.py builds the models and calibrates their heads): the prefill half takes
input_ids, attention_mask, position_ids (1, T); the decode half also past_key_values.N.key/value
(1, KV_HEADS, P, HEAD_DIM); both give logits and present.N.key/value. As optimum runs the merged file,
the first call feeds use_cache_branch=False with an empty past, every later call True. Greedy
tokens from onnxruntime on the merged file are checked against torch before a file is saved.
Writes <out>/<name>_merged.onnx and manifest.json. Needs optimum-onnx (pip install optimum-onnx)."""
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
from transformers.cache_utils import DynamicCache

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.export_decoders import LAYERS, PROMPT, VOCAB, Step, build, calibrate_head, names  # noqa: E402
from scripts.export_zoo import strip_debug_info  # noqa: E402

FAMILIES = ("qwen3",)


class Prefill(nn.Module):
    """The decoder without past: the prompt in, logits and the first present out."""

    def __init__(self, step: Step):
        super().__init__()
        self.step = step

    def forward(self, input_ids, attention_mask, position_ids):
        step = self.step
        out = step.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=DynamicCache(config=step.model.config), use_cache=True)
        present = []
        for layer in out.past_key_values.layers[:step.layers]:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def _export(module, args, path: Path, inputs, outputs, axes) -> None:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        stdout, sys.stdout = sys.stdout, io.StringIO()
        try:
            torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs,
                              opset_version=17, dynamo=False, dynamic_axes=axes)
        finally:
            sys.stdout = stdout


def export_merged(step: Step, path: Path, kv_heads: int, head_dim: int) -> None:
    from optimum.onnx import merge_decoders
    inputs, outputs = names(LAYERS)
    axes = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "position_ids": {1: "seq"}, "logits": {1: "seq"}}
    axes.update({n: {2: "total"} for n in outputs[1:]})
    ids, pos = torch.tensor([[1, 2]]), torch.tensor([[3, 4]])
    prefill, decode = path.with_suffix(".prefill.onnx"), path.with_suffix(".decode.onnx")
    _export(Prefill(step), (ids, torch.ones(1, 2, dtype=torch.int64), torch.tensor([[0, 1]])), prefill,
            inputs[:3], outputs, axes)
    past = [torch.randn(1, kv_heads, 3, head_dim) for _ in range(2 * LAYERS)]
    _export(step, (ids, torch.ones(1, 5, dtype=torch.int64), pos, *past), decode, inputs, outputs,
            {**axes, **{n: {2: "past"} for n in inputs[3:]}})
    try:
        merge_decoders(str(prefill), str(decode), save_path=str(path))
    finally:
        prefill.unlink(missing_ok=True)
        decode.unlink(missing_ok=True)
    strip_debug_info(path)


def merged_generate(path: Path, kv_heads: int, head_dim: int, steps: int):
    """Greedy tokens and logits from onnxruntime on the merged file, fed as optimum feeds it."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs, _ = names(LAYERS)
    past = [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * (2 * LAYERS)
    ids, position, tokens, logits = list(PROMPT), 0, [], []
    for _ in range(steps):
        p = past[0].shape[2]
        feeds = dict(zip(inputs, [np.array([ids], np.int64), np.ones((1, p + len(ids)), np.int64),
                                  np.arange(p, p + len(ids), dtype=np.int64)[None], *past]))
        out = sess.run(None, {**feeds, "use_cache_branch": np.array([p > 0])})
        logits.append(out[0][0, -1])
        tokens.append(int(np.argmax(out[0][0, -1])))
        past, position, ids = out[1:], position + len(ids), [tokens[-1]]
    return tokens, np.array(logits)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "decoders_merged")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for seed, name in enumerate(FAMILIES):
        if args.names and name not in args.names:
            continue
        model, cfg, kv_heads, head_dim = build(name, seed + 11)
        step = Step(model, LAYERS).eval()
        tokens, logits = calibrate_head(model, step, kv_heads, head_dim, LAYERS, seed)
        path = args.out / f"{name}_merged.onnx"
        export_merged(step, path, kv_heads, head_dim)
        got_tokens, got_logits = merged_generate(path, kv_heads, head_dim, len(tokens))
        err = float(np.abs(got_logits - logits).max())
        if got_tokens != tokens or err > 1e-3 or len(set(tokens)) < 8:
            print(f"{path.stem}: onnxruntime differs from torch (max |dlogit| {err:.2e}) or too few tokens")
            path.unlink()
            return 1
        manifest[path.stem] = dict(file=path.name, family=name, exporter="optimum-merged", layers=LAYERS,
                                   kv_heads=kv_heads, heads=cfg.num_attention_heads, head_dim=head_dim, vocab=VOCAB,
                                   prompt=PROMPT, tokens=tokens, bytes=path.stat().st_size)
        print(f"{path.stem}: {path.stat().st_size // 1024} KiB, {len(set(tokens))} distinct tokens, "
              f"torch vs onnxruntime {err:.1e}")
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

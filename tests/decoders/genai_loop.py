"""Greedy generation with onnxruntime-genai builder models: onnxruntime on the ONNX file against our
files (a prompt file with the past removed, a decode file with a run-time past), step by step."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import converter
from converter.ncnn_side.layout import to_ncnn, to_onnx
from converter.ncnn_side.runtime import NcnnRunner

MODELS = Path(__file__).resolve().parents[2] / "models" / "decoders_genai"


def head_config(path: Path) -> tuple[int, int]:
    cfg = json.loads(path.with_name(path.name.replace(".onnx", ".genai_config.json")).read_text())
    return cfg["model"]["decoder"]["num_key_value_heads"], cfg["model"]["decoder"]["head_size"]


def past_names(path: Path) -> list[str]:
    return [i.name for i in onnx.load(path, load_external_data=False).graph.input
            if i.name.startswith("past_key_values")]


class Pair:
    """The prompt and decode conversions of one model, saved under `folder`."""

    def __init__(self, path: Path, folder: Path, block_quant: str = "int8"):
        groups, dim = head_config(path)
        self.pasts = past_names(path)
        self.decode = converter.convert(str(path), block_quant=block_quant)
        # one past given an empty sequence makes the prompt file: every past is dropped
        self.prompt = converter.convert(str(path), input_shapes={self.pasts[0]: [1, groups, 0, dim]},
                                        block_quant=block_quant)
        self.files = {}
        for tag, model in (("prompt", self.prompt), ("decode", self.decode)):
            param, bin_ = folder / f"{tag}.ncnn.param", folder / f"{tag}.ncnn.bin"
            model.save(param, bin_)
            self.files[tag] = (param, bin_, model.io())
        self.groups, self.dim = groups, dim

    def run(self, feeds: dict, past_len: int, runner: NcnnRunner | None) -> dict[str, np.ndarray]:
        tag = "prompt" if past_len == 0 else "decode"
        feeds = {k: v for k, v in feeds.items() if past_len or k not in self.pasts}
        if runner is None:
            return (self.prompt if tag == "prompt" else self.decode).run(feeds)
        param, bin_, io = self.files[tag]
        inputs = {e["onnx"]: e for e in io["inputs"]}
        outputs = {e["ncnn"]: e for e in io["outputs"]}
        ncnn_feeds = {inputs[k]["ncnn"]: to_ncnn(v, inputs[k]) for k, v in feeds.items() if k in inputs}
        got = runner.run(param, bin_, ncnn_feeds, list(outputs), threads=1)
        return {outputs[k]["onnx"]: to_onnx(v, outputs[k]) for k, v in got.items()}


def generate(path: Path, pair: Pair, runner: NcnnRunner | None, tokens: int = 12, prompt: int = 5,
             seed: int = 0) -> list[dict]:
    """Prompt, one chunk of 3 tokens with a past, then greedy single tokens: per step, the
    largest difference of each output from onnxruntime's and both argmax tokens."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 200, (1, prompt)).astype(np.int64)
    ref_cache = {p: np.zeros((1, pair.groups, 0, pair.dim), np.float32) for p in pair.pasts}
    our_cache = dict(ref_cache)
    steps = []
    for step in range(tokens):
        past = ref_cache[pair.pasts[0]].shape[2]
        mask = np.ones((1, past + ids.shape[1]), np.int64)
        ref = dict(zip(names, sess.run(None, {"input_ids": ids, "attention_mask": mask, **ref_cache})))
        ours = pair.run({"input_ids": ids, "attention_mask": mask.astype(np.float32), **our_cache}, past, runner)
        steps.append({"diff": {k: float(np.max(np.abs(ours[k] - ref[k]))) for k in names},
                      "scale": {k: float(np.max(np.abs(ref[k]))) for k in names},
                      "tokens": (int(ref["logits"][0, -1].argmax()), int(ours["logits"][0, -1].argmax())),
                      "margin": float(np.subtract(*np.sort(ref["logits"][0, -1])[:-3:-1])),   # best - second
                      "past": past, "new": ids.shape[1]})
        ref_cache = {p: ref[p.replace("past_key_values", "present")] for p in pair.pasts}
        our_cache = {p: ours[p.replace("past_key_values", "present")] for p in pair.pasts}
        ids = (rng.integers(0, 200, (1, 3)) if step == 1 else np.array([[steps[-1]["tokens"][1]]])).astype(np.int64)
    return steps

"""Greedy generation with an encoder-decoder split as optimum exports it: the encoder once, the
first decoder step over the prompt (it gives the self cache and the cross cache), then one token per
step through decoder_with_past, its present self cache fed back as the next step's past and the
cross cache fed back unchanged. One loop, run by any backend given as a callable taking and giving
ONNX-named, ONNX-shaped arrays: onnxruntime, the interpreter, the real ncnn in a child process.
(The loop lives here alone so that a shared generation API can replace it.)"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnxruntime as ort

from converter import convert
from converter.ncnn_side.layout import to_ncnn, to_onnx
from converter.ncnn_side.runtime import run_ncnn

Runner = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass
class Generation:
    tokens: list[int]
    logits: list[np.ndarray]        # the logits each token was chosen from, (vocab,) each


def greedy(encoder: Runner, decoder: Runner, step: Runner, encoder_feeds: dict[str, np.ndarray],
           prompt: list[int], steps: int, encoder_mask: np.ndarray | None = None) -> Generation:
    hidden = encoder(encoder_feeds)["last_hidden_state"]
    feeds = {"input_ids": np.array([prompt], np.int64), "encoder_hidden_states": hidden}
    mask = {} if encoder_mask is None else {"encoder_attention_mask": encoder_mask.astype(np.int64)}
    out = decoder({**feeds, **mask})
    cross = {k.replace("present", "past_key_values"): v for k, v in out.items() if ".encoder." in k}
    tokens, logits = [], []
    while True:
        row = out["logits"].reshape(-1, out["logits"].shape[-1])[-1]
        tokens.append(int(np.argmax(row)))
        logits.append(row)
        if len(tokens) == steps:
            return Generation(tokens, logits)
        past = {k.replace("present", "past_key_values"): v for k, v in out.items() if ".decoder." in k}
        out = step({"input_ids": np.array([[tokens[-1]]], np.int64), **mask, **past, **cross})


def onnxruntime_runner(path: Path) -> Runner:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def converted_runners(path: Path, tmp: Path):
    """The file converted once: its NcnnModel and {backend: runner} for the interpreter and the real
    ncnn on the saved .param/.bin."""
    model = convert(path)
    param, bin_ = tmp / f"{path.stem}.ncnn.param", tmp / f"{path.stem}.ncnn.bin"
    model.save(param, bin_)
    io = model.io()

    def ncnn(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        got = run_ncnn(param, bin_, ncnn_feeds, [e["ncnn"] for e in io["outputs"]], threads=1)
        return {e["onnx"]: to_onnx(got[e["ncnn"]], e) for e in io["outputs"]}
    wanted = {e["onnx"] for e in io["inputs"]}
    return model, {"interpreter": lambda feeds: model.run({k: v for k, v in feeds.items() if k in wanted}),
                   "ncnn": ncnn}

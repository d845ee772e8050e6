"""Greedy generation on a converted decoder step: prefill a prompt, then decode one token per call,
carrying each `present.*` output into the matching `past_key_values.*` input of the next call, as
a C++ host loop does with ncnn::Extractor.

Which inputs are the cache and which outputs feed them comes from the names in the io record
(converter/shapes/decoder_layout.py): nothing here knows a model family. Inputs that are neither the
tokens, the mask, the positions nor a self-attention cache (an encoder-decoder step's cross
caches, encoder states) are passed as `fixed` feeds, the same at every call.

ncnn cannot hold an empty Mat (a zero-length past fed to the pip runtime segfaulted, 2026-11-28),
so a file that reads the past cannot take a generation's first call. That call (an empty past) goes
to the file that takes no past: the prompt file convert writes beside a decoder step (the same model
with its past removed, on the same .bin: converter/shapes/decoder_layout.py starts_from_prompt_file),
or a merged decoder's prefill file. `pair_step` joins the two; `file_step` builds it from the files.
onnxruntime runs the same loop on the ONNX file from a true empty past.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from converter.onnx_side.merged_decoder import BRANCH_INPUT, PHASES
from converter.shapes.decoder_layout import (cache_pairs, is_cross, past_inputs, prompt_param_path,
                                             starts_from_prompt_file)
from converter.ncnn_side.layout import sidecar_path, to_ncnn, to_onnx
from converter.ncnn_side.runtime import NcnnRunner

Step = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
TOKENS, MASK, POSITIONS, LOGITS = "input_ids", "attention_mask", "position_ids", "logits"


@dataclass
class Generated:
    tokens: list[int]
    logits: list[np.ndarray] = field(default_factory=list)    # the last position's logits per step


def decoder_io(record: dict) -> dict:
    """What a host loop needs from an io record: the self-attention cache inputs (each with its
    ONNX shape and the axis that grows), the present output feeding each, the other inputs."""
    inputs = {e["onnx"]: e for e in record["inputs"]}
    outputs = [e["onnx"] for e in record["outputs"]]
    pairs = {p: q for p, q in cache_pairs(inputs, outputs).items() if not is_cross(q)}
    caches = {}
    for name in past_inputs(inputs):
        if is_cross(name):
            continue
        shape = inputs[name]["onnx_shape"]
        grow = [i for i, d in enumerate(shape) if d is None]
        if len(grow) != 1 or name not in pairs.values():
            raise ValueError(f"{name}: not a cache with one growing axis and a present output "
                             f"(shape {shape}; outputs {', '.join(outputs)})")
        caches[name] = (shape, grow[0])
    if TOKENS not in inputs or LOGITS not in outputs or not caches:
        raise ValueError("not a decoder step: it needs input_ids, past_key_values.* inputs, "
                         "logits and present.* outputs")
    others = [n for n in inputs if n not in caches and n not in (TOKENS, MASK, POSITIONS)]
    return {"caches": caches, "pairs": pairs, "others": others, "inputs": list(inputs)}


def greedy(step: Step, io: dict, prompt: list[int], new_tokens: int,
           fixed: dict[str, np.ndarray] | None = None) -> Generated:
    """Greedy generation from an empty past: `step` maps ONNX-named feeds to ONNX-named outputs (a
    converted file's through pair_step / file_step); `io` is decoder_io(record)."""
    fixed = dict(fixed or {})
    missing = [n for n in io["others"] if n not in fixed]
    if missing:
        raise ValueError(f"inputs {', '.join(missing)} need values (fixed=...)")
    past = {}
    for name, (shape, axis) in io["caches"].items():
        past[name] = np.zeros(empty_past_shape(shape, axis), np.float32)
    mask: list[int] = []
    position, ids, out = 0, list(prompt), Generated([])
    for _ in range(new_tokens):
        mask += [1] * len(ids)
        feeds = {TOKENS: np.array([ids], np.int64), **past, **fixed}
        if MASK in io["inputs"]:
            feeds[MASK] = np.array([mask], np.int64)
        if POSITIONS in io["inputs"]:
            feeds[POSITIONS] = np.arange(position, position + len(ids), dtype=np.int64)[None]
        result = step(feeds)
        last = np.asarray(result[LOGITS], np.float32).reshape(-1, result[LOGITS].shape[-1])[-1]
        out.logits.append(last)
        out.tokens.append(int(np.argmax(last)))
        past = {io["pairs"][p]: np.asarray(result[p], np.float32) for p in io["pairs"]}
        position += len(ids)
        ids = [out.tokens[-1]]
    return out


def onnxruntime_step(onnx_path) -> Step:
    import onnxruntime
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    wanted = {i.name for i in session.get_inputs()}
    return lambda feeds: dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in wanted})))


def interpreter_step(model) -> Step:
    """An NcnnModel (converter.api.load_ncnn or convert) run by the numpy interpreter."""
    return lambda feeds: model.run(feeds)


def ncnn_step(param, bin_, record: dict, runner=None) -> Step:
    """The real ncnn runtime in a child process (converter/ncnn_runtime.NcnnRunner)."""
    runner = runner or NcnnRunner(threads=1)
    entries = {e["onnx"]: e for e in record["inputs"]}
    outs = record["outputs"]

    def run(feeds):
        blobs = {entries[k]["ncnn"]: to_ncnn(v, entries[k]) for k, v in feeds.items() if k in entries}
        got = runner.run(param, bin_, blobs, [e["ncnn"] for e in outs])
        return {e["onnx"]: to_onnx(got[e["ncnn"]], e) for e in outs}
    return run


def _empty_past(feeds, io) -> bool:
    return any(feeds[n].shape[axis] == 0 for n, (_, axis) in io["caches"].items() if n in feeds)


def pair_step(prefill: Step, decode: Step, io: dict) -> Step:
    """Two files as one step: a call with an empty past (a generation's first) runs `prefill`, which
    takes no past (a merged decoder's prefill file, converter/onnx_side/merged_decoder.py, or a genai
    model's prompt file); the others decode."""
    return lambda feeds: (prefill({k: v for k, v in feeds.items() if k not in io["caches"]})
                          if _empty_past(feeds, io) else decode(feeds))


def merged_onnxruntime_step(onnx_path, io: dict) -> Step:
    """onnxruntime on optimum's merged file, fed as optimum feeds it: use_cache_branch False with the
    empty past of the first call, True with a past."""
    step = onnxruntime_step(onnx_path)
    return lambda feeds: step({**feeds, BRANCH_INPUT: np.array([not _empty_past(feeds, io)])})


def read_pair(param_path) -> dict[str, tuple[Path, Path, dict]] | None:
    """phase -> (param, bin, record) for a file of a merged decoder's pair (both files beside it), else None."""
    pair = read_record(param_path).get("pair")
    if pair is None:
        return None
    folder = Path(param_path).parent
    return {phase: (folder / pair[phase]["param"], folder / pair[phase]["bin"],
                    read_record(folder / pair[phase]["param"])) for phase in PHASES}


def read_record(param_path) -> dict:
    return json.loads(Path(sidecar_path(param_path)).read_text(encoding="utf-8"))


def prompt_file(param_path) -> Path | None:
    """The prompt file convert wrote beside `param_path` (decoder_layout.starts_from_prompt_file), or None."""
    path = prompt_param_path(param_path)
    return path if path.is_file() else None


def wants_prompt_file(record: dict) -> bool:
    """Whether convert writes a prompt file beside the files of this io record (decoder_layout's
    starts_from_prompt_file; a merged decoder's pair has its prefill file instead)."""
    return "pair" not in record and starts_from_prompt_file([e["onnx"] for e in record["inputs"]],
                                                            [e["onnx"] for e in record["outputs"]])


def prompt_input_shapes(record: dict) -> dict[str, list[int]]:
    """convert's input_shapes that make a decoder step's prompt file: its first self past with an empty
    sequence, which empties them all (converter/onnx_side/empty_past.py)."""
    name, (shape, axis) = next(iter(decoder_io(record)["caches"].items()))
    return {name: empty_past_shape(shape, axis)}


def empty_past_shape(shape, axis: int) -> list[int]:
    """A cache's ONNX shape with no rows on its growing `axis` (its other unknown extents 1)."""
    return [0 if i == axis else (1 if d is None else d) for i, d in enumerate(shape)]


def file_step(param_path, bin_path, load=None, runner=None) -> tuple[Step, dict]:
    """(step, io) for a generation on converted files: the decode file `param_path` and the file its
    first call runs, found beside it (a merged decoder's prefill file, or the prompt file on the same
    .bin), in real ncnn (`runner`: an NcnnRunner) or, given `load` (converter.api.load_ncnn), in the
    numpy interpreter."""
    files = read_pair(param_path)
    if files is None:
        prompt = prompt_file(param_path)
        if prompt is None:
            raise ValueError(f"{param_path}: a generation starts from the prompt file {prompt_param_path(param_path).name} "
                             f"that convert writes beside a decoder step: not found")
        files = {"prefill": (prompt, bin_path, read_record(prompt)),
                 "decode": (Path(param_path), bin_path, read_record(param_path))}
    runner = runner or (None if load else NcnnRunner(threads=1))
    steps = {phase: interpreter_step(load(p, b)) if load else ncnn_step(p, b, r, runner)
             for phase, (p, b, r) in files.items()}
    io = decoder_io(files["decode"][2])
    return pair_step(steps["prefill"], steps["decode"], io), io


def compare(reference: Generated, got: Generated, rtol: float) -> list[str]:
    """Step by step: equal tokens, and max |dlogit| <= rtol * max |reference logit| at each step.
    Returns one line per differing step (empty when all agree)."""
    problems = []
    for k, (a, b) in enumerate(zip(reference.logits, got.logits)):
        err, scale = float(np.abs(a - b).max()), float(np.abs(a).max())
        if reference.tokens[k] != got.tokens[k] or err > rtol * scale:
            problems.append(f"step {k}: token {got.tokens[k]} (reference {reference.tokens[k]}), "
                            f"max |dlogit| {err:.3g} of {scale:.3g}")
    if len(reference.tokens) != len(got.tokens):
        problems.append(f"{len(got.tokens)} tokens, reference {len(reference.tokens)}")
    return problems

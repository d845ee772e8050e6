"""Which inputs of an autoregressive decoder step are its cache, and what relates their lengths.

An exported decoder step (Hugging Face optimum's layout, transformers modules through either torch
exporter, onnxruntime-genai's builder) takes its cache as inputs named `past_key_values.N.key` /
`.value` (also `past_key_values.N.decoder.key`, `past.N.key`, ...) with a run-time length P, the new
tokens `input_ids` (1, T), and an `attention_mask` over the whole sequence (1, P + T); it gives the
cache one step longer as outputs named `present.N.key` / `.value` (`present_key_values...`).

The exporters name the three lengths apart (`past`, `seq`, `total`; dynamo's `s15`, `s70`, `s53`):
nothing in the file says that the mask is P + T long, yet the mask is what the exported masking
code gathers at arange(P + T). The layout's contract says so; `related_extents` writes it down for
the run-time size terms (converter/shapes/symbolic_shapes.py), so that gather is seen to change nothing.
An encoder-decoder step's cross-attention cache (`...encoder.key`, `cross`) has the encoder's fixed
length and is not related.

`cache_pairs` pairs each present output with the past input it feeds in the next call: the host
loop's contract (converter/generation.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from converter.shapes.symbolic import Ref, Term, op


def starts_from_prompt_file(inputs, outputs) -> bool:
    """Whether a decoder step with these input and output names gets a prompt file: the same model with
    its self past removed, on the same .bin (converter/onnx_side/empty_past.py; convert writes it beside
    as prompt_param_path names it). ncnn holds no empty Mat, so a file that reads the past cannot take a
    generation's first call; a cache row of zeros standing for the empty past is no answer, as not every
    attention reads a mask that could hide it (onnxruntime-genai's GroupQueryAttention reads none, a
    sliding window reads the mask's first columns only). So the prompt file takes the prompt, and the
    file itself then one token a call. A decoder-only step: an encoder-decoder step's first call is the
    decoder file without a past that the export provides."""
    pairs = cache_pairs(inputs, outputs)
    pasts = past_inputs(inputs)
    return "input_ids" in inputs and bool(pairs) and not any(is_cross(n) for n in pasts)


def prompt_param_path(param) -> Path:
    """`m.ncnn.param` -> `m.ncnn.prompt.param` (its io record `m.ncnn.prompt.json`)."""
    param = Path(param)
    return param.with_name(f"{param.stem}.prompt{param.suffix}")


_PAST = re.compile(r"^(?:past_key_values|past_key_value|past)[._](.+)$")
_PRESENT = re.compile(r"^(?:present_key_values|present_key_value|present)[._](.+)$")
_CROSS = ("encoder", "cross")


def past_inputs(names) -> list[str]:
    return [n for n in names if _PAST.match(n)]


def present_outputs(names) -> list[str]:
    return [n for n in names if _PRESENT.match(n)]


def is_cross(name: str) -> bool:
    """A cross-attention cache: fixed over the generation (the encoder's keys and values)."""
    return any(word in name.lower() for word in _CROSS)


def cache_pairs(inputs, outputs) -> dict[str, str]:
    """present output -> the past input it becomes in the next call, matched by the name's tail
    (`present.0.key` -> `past_key_values.0.key`)."""
    by_tail = {_PAST.match(n).group(1): n for n in past_inputs(inputs)}
    pairs = {}
    for name in outputs:
        m = _PRESENT.match(name)
        if m and m.group(1) in by_tail:
            pairs[name] = by_tail[m.group(1)]
    return pairs


def related_extents(graph, dims: dict[str, tuple[Term, ...]]) -> dict[str, tuple[Term, ...]]:
    """dims of `attention_mask` with its run-time length written as past length + new tokens,
    when the graph's inputs have the decoder layout (else nothing). The past is one that is read
    (an inlined prefill branch leaves its past inputs unread: its mask is the new tokens alone) and,
    of those, one read whole: a sliding-window layer (Gemma3 through torch.export) cuts its past to
    the window first, or its present (TorchScript), and its past is then shorter than the history the
    mask spans. Where every layer cuts its present and none its past (Mistral through TorchScript), no
    past spans it: nothing is said of the mask."""
    self_past = [n for n in past_inputs(graph.inputs) if not is_cross(n) and graph.consumers(n)]
    mask, ids = dims.get("attention_mask"), dims.get("input_ids")
    if mask is None or ids is None or len(mask) != 2 or len(ids) != 2 or not isinstance(ids[1], Ref) \
            or not isinstance(mask[1], Ref):
        return {}
    if not self_past:
        has_present = bool(present_outputs(graph.outputs))
        return {"attention_mask": (mask[0], ids[1])} if has_present else {}
    cut = sliding_pasts(graph)
    read_cut = [n for n in self_past if any(r.op == "Slice" and r.inputs[0] == n for r in graph.consumers(n))]
    whole = [n for n in self_past if n not in cut and n not in read_cut]
    if not whole and not read_cut:      # every layer slides (Mistral): no past spans the mask's history
        return {}
    past = dims.get((whole or self_past)[0])
    if past is None or len(past) != 4 or not isinstance(past[2], Ref):
        return {}
    return {"attention_mask": (mask[0], op("+", past[2], ids[1]))}


def sliding_pasts(graph) -> set[str]:
    """Self-attention pasts whose present is cut to its last rows (a Slice, or the Crop it became): a
    sliding-window layer's, shorter than the history past the window, and than a full layer's past,
    even where the export names every past length alike (TorchScript's `past`)."""
    cut = set()
    for present, past in cache_pairs(graph.inputs, graph.outputs).items():
        producer = graph.producer(present)
        if not is_cross(past) and producer is not None and producer.op in ("Slice", "Crop"):
            cut.add(past)
    return cut

"""Hugging Face optimum's merged decoder (`decoder_model_merged.onnx`) as a prefill/decode pair.

optimum merges the decoder without past (prefill) and the decoder with past (decode) into one file:
one If on a boolean input `use_cache_branch` runs the with-past graph (then) or the no-past graph
(else), the weights shared in the main graph. ncnn has no If on a run-time value, and a file that
takes the past cannot run the prefill (ncnn holds no empty Mat), so each branch becomes its own
file (api.convert_merged): the conversion fixes `use_cache_branch` to that branch's value (as
`--input-value` does), so inline_if splices the branch in and it is folded and shape-inferred as a
main graph is; the inputs only the other branch reads (the prefill file takes no past) are then
dropped from the file.

The record of each file (`pair`) names both files and the branch input; converter/generation.py
and the generated script run the first call (an empty past) through the prefill file and every
later one through the decode file, as optimum feeds the merged file (use_cache_branch False, then
True).
"""
from __future__ import annotations

from pathlib import Path

import onnx

BRANCH_INPUT = "use_cache_branch"
PHASES = {"prefill": False, "decode": True}     # the branch input's value for each file


def branch_input(proto: onnx.ModelProto) -> str | None:
    """`use_cache_branch` when it is a boolean graph input that an If of the main graph reads as its
    condition (optimum's merged decoder), else None."""
    graph = proto.graph
    declared = {i.name: i.type.tensor_type.elem_type for i in graph.input}
    if declared.get(BRANCH_INPUT) != onnx.TensorProto.BOOL:
        return None
    return BRANCH_INPUT if any(n.op_type == "If" and n.input and n.input[0] == BRANCH_INPUT
                               for n in graph.node) else None


def pair_paths(param: Path, bin_: Path) -> dict[str, tuple[Path, Path]]:
    """`out/m.ncnn.param` -> `out/m_prefill.ncnn.param` and `out/m_decode.ncnn.param` (and .bin)."""
    def named(path: Path, phase: str) -> Path:
        stem = path.name.removesuffix(path.suffix)
        core = stem.removesuffix(".ncnn")
        return path.with_name(f"{core}_{phase}{stem[len(core):]}{path.suffix}")
    return {phase: (named(param, phase), named(bin_, phase)) for phase in PHASES}


def pair_record(phase: str, paths: dict[str, tuple[Path, Path]]) -> dict:
    """What the record of one file of the pair says: its phase, both files, the branch input."""
    return {"phase": phase, "branch_input": BRANCH_INPUT,
            **{p: {"param": paths[p][0].name, "bin": paths[p][1].name} for p in PHASES}}

"""Files for one ncnn release: what each written layer needs (converter/ncnn_side/releases.py), the
oldest release a graph's files need, the rewrites that let an older release read them, and the
one-line refusal where there is none.

`needs(graph)` reads the final ncnn graph, the one the writer formats, so `ncnn_min_version` is
computed from what was written. `fit_to_release(graph, target)` runs after the pass pipeline (the
pipeline itself already skipped the fusions into layers the target lacks: `skipped_passes`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from converter.ir import ConversionError, Graph, Node
from converter.ncnn_side.layers import SPECS
from converter.ncnn_side.releases import LAYERS, NEWEST, OLDEST, OP_CODES, PARAMS, describe_param, param_release


@dataclass(frozen=True)
class Need:
    release: int
    what: str          # "layer Flip", "Reshape param 6 (shape expression)", "BinaryOp op_type 12"
    node: Node

    def refusal(self, target: int) -> str:
        return (f"{self.node.describe()} needs {self.what} (ncnn layer '{self.node.name}'), which ncnn "
                f"{target} does not read: the oldest release that has it is {self.release}")


def node_needs(node: Node) -> list[Need]:
    needs = [Need(LAYERS.get(node.op, NEWEST), f"layer {node.op}", node)]
    for pid, value in node.params.items():
        since = param_release(node.op, pid, value, _default(node, pid))
        if since is not None:
            needs.append(Need(since, describe_param(node.op, pid), node))
    codes = OP_CODES.get(node.op, {})
    code = node.params.get(0, 0) if codes else None
    if code in codes:
        needs.append(Need(codes[code], f"{node.op} op_type {code}", node))
    return needs


def _default(node: Node, pid: int):
    """The param's default, or None where there is none to compare with (a default that copies
    another param: any value counts as given)."""
    spec = SPECS.get(node.op)
    default = spec.by_id[pid].default if spec is not None and pid in spec.by_id else None
    return None if isinstance(default, str) and not isinstance(node.params[pid], str) else default


def needs(graph: Graph) -> list[Need]:
    return [need for node in graph.topological() for need in node_needs(node)]


def min_version(graph: Graph) -> int:
    """The oldest release that reads every layer and param of the graph's files (never below OLDEST,
    the oldest release onnx2ncnn's tests run files in)."""
    return max([OLDEST, *(n.release for n in needs(graph))])


def skipped_passes(target: int) -> set[str]:
    """Fusions into layers the target lacks, by pass name: without them the graph keeps the older
    form (attention as MultiHeadAttention or MatMul + Softmax, RMS norm written out)."""
    skip = set()
    if target < LAYERS["SDPA"]:
        skip |= {"fuse_sdpa", "fuse_decoder_attention", "expand_small_attention"}
    elif target < PARAMS[("SDPA", 5)]:     # masked SDPA: MultiHeadAttention stays (fuse_decoder_attention
        skip.add("expand_small_attention")  # reads the target itself and fuses only unmasked attention)
    if target < LAYERS["RMSNorm"]:
        skip.add("fuse_rmsnorm")
    return skip


def expressions_readable(target: int) -> bool:
    return target >= PARAMS[("Reshape", 6)]


def fit_to_release(graph: Graph, target: int) -> dict:
    """Rewrite what `target` cannot read into older equivalents, then refuse (one line, naming the
    ONNX node, the layer or param and the oldest release with it) what is left."""
    rewritten = 0
    for node in graph.topological():
        rewritten += _fold_attention_scale(node, target)
        _drop_default_params(node, target)
    left = [n for n in needs(graph) if n.release > target]
    if left:
        first = min(left, key=lambda n: -n.release)
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise ConversionError(first.refusal(target) + more)
    return {"attention_scales_folded": rewritten}


def _fold_attention_scale(node: Node, target: int) -> int:
    """MultiHeadAttention's scale param (6=) is younger than the layer, which before it scales q by
    1/sqrt(embed_dim / num_heads): the same product comes from q's weight and bias scaled by the
    ratio (q is scaled after its bias)."""
    if node.op != "MultiHeadAttention" or 6 not in node.params or target >= PARAMS[("MultiHeadAttention", 6)]:
        return 0
    p = SPECS[node.op].resolve(node.params)
    implicit = 1.0 / np.sqrt(np.float32(p.embed_dim // p.num_heads))
    ratio = np.float32(node.params.pop(6)) / np.float32(implicit)
    if ratio == 1:
        return 0
    if node.weights[0].dtype != np.float32:
        raise ConversionError(f"{node.describe()} needs MultiHeadAttention param 6 (scale) with quantized "
                              f"weights, which ncnn {target} does not read: the oldest release that has it is "
                              f"{PARAMS[('MultiHeadAttention', 6)]}")
    node.weights[0] = (node.weights[0] * ratio).astype(np.float32)
    node.weights[1] = (node.weights[1] * ratio).astype(np.float32)
    return 1


def _drop_default_params(node: Node, target: int) -> None:
    """Params younger than the target that hold their default: an older runtime does the same
    without them (and cannot parse a string one)."""
    for pid in [pid for pid in node.params if PARAMS.get((node.op, pid), 0) > target]:
        if param_release(node.op, pid, node.params[pid], _default(node, pid)) is None:
            del node.params[pid]

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

from converter.ir import ConversionError, Graph, Node, Tensor
from converter.ncnn_side.axes import reshape_params
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


# ncnn before this release gives a 4-D blob that Tile repeats on d but not on c back untiled (its
# tile.cpp picked the output shape by cases and missed that one; fixed 2025-11-12, checked in the pip
# releases 20240410 and 20250503)
TILE_DEPTH = 20260113


def tiles_depth_alone(node: Node, graph: Graph | None) -> bool:
    if node.op != "Tile" or graph is None or len(node.params.get(2) or ()) != 4:
        return False
    repeats = list(node.params[2])
    shape = graph.tensors[node.inputs[0]].ncnn_shape
    return shape is not None and len(shape) == 4 and repeats[0] == 1 and repeats[1] != 1


def node_needs(node: Node, graph: Graph | None = None) -> list[Need]:
    needs = [Need(LAYERS.get(node.op, NEWEST), f"layer {node.op}", node)]
    if tiles_depth_alone(node, graph):
        needs.append(Need(TILE_DEPTH, "Tile repeating the depth axis alone", node))
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
    return [need for node in graph.topological() for need in node_needs(node, graph)]


def min_version(graph: Graph) -> int:
    """The oldest release that reads every layer and param of the graph's files (never below OLDEST,
    the oldest release onnx2ncnn's tests run files in)."""
    return max([OLDEST, *(n.release for n in needs(graph))])


def skipped_passes(target: int) -> set[str]:
    """Fusions into layers the target lacks, by pass name: without them the graph keeps the older
    form (attention as MultiHeadAttention or MatMul + Softmax, RMS norm and rotary written out)."""
    skip = set()
    if target < LAYERS["SDPA"]:
        skip |= {"fuse_sdpa", "fuse_decoder_attention", "expand_small_attention"}
    elif target < PARAMS[("SDPA", 5)]:     # masked SDPA: MultiHeadAttention stays (fuse_decoder_attention
        skip.add("expand_small_attention")  # reads the target itself and fuses only unmasked attention)
    if target < LAYERS["RMSNorm"]:
        skip.add("fuse_rmsnorm")
    if target < LAYERS["RotaryEmbed"]:      # rotary stays the slices, negation and products it is
        skip.add("fuse_rotary_embed")
    return skip


def fit_to_release(graph: Graph, target: int) -> dict:
    """Rewrite what `target` cannot read into older equivalents, then refuse (one line, naming the
    ONNX node, the layer or param and the oldest release with it) what is left."""
    rewritten = 0
    for node in list(graph.topological()):
        rewritten += _fold_attention_scale(node, target)
        _drop_default_params(node, target)
        if target < TILE_DEPTH and tiles_depth_alone(node, graph):
            _tile_depth_as_rows(graph, node)
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


def _tile_depth_as_rows(graph: Graph, node: Node) -> None:
    """Tile (c, d, h, w) by (1, rd, rh, rw) for a release that misses rd alone: the blob seen as
    (c, d, h * w) tiled on its rows by rd repeats each d-block whole, which is the same order; then
    (c, d * rd, h, w) again, and a second Tile for rh, rw (which every release does right)."""
    c, d, h, w = graph.tensors[node.inputs[0]].ncnn_shape
    _, rd, rh, rw = node.params[2]
    if None in (c, d, w):
        raise ConversionError(f"{node.describe()} needs Tile repeating the depth axis alone of a blob whose "
                              f"extents are known only at run time, which ncnn before {TILE_DEPTH} does not do right")
    out = node.outputs[0]
    rows, tiled = graph.fresh_name(f"{out}_rows"), graph.fresh_name(f"{out}_rows_tiled")
    graph.add_tensor(Tensor(rows, (c, d, None if h is None else h * w)))
    graph.add_tensor(Tensor(tiled, (c, d * rd, None if h is None else h * w)))
    graph.remove_node(node)
    layers = [Node(graph.fresh_name(f"{node.name}_rows"), "Reshape", [node.inputs[0]], [rows],
                   params=reshape_params((c, d, None)), ncnn=True, origin=node.origin),
              Node(node.name, "Tile", [rows], [tiled], params={2: [1, rd, 1]}, ncnn=True, origin=node.origin)]
    back = out
    if (rh, rw) != (1, 1):
        back = graph.fresh_name(f"{out}_depth")
        graph.add_tensor(Tensor(back, (c, d * rd, h, w)))
        layers.append(Node(graph.fresh_name(f"{node.name}_rest"), "Tile", [back], [out],
                           params={2: [1, 1, rh, rw]}, ncnn=True, origin=node.origin))
    layers.insert(2, Node(graph.fresh_name(f"{node.name}_depth"), "Reshape", [tiled], [back],
                          params=reshape_params((c, d * rd, None, w)), ncnn=True, origin=node.origin))
    for layer in layers:
        graph.add_node(layer)

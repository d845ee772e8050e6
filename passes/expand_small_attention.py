"""Write a small MultiHeadAttention layer as Gemm projections around ncnn's SDPA layer.

The same attention (the form pnnx writes):
    Gemm (the q/k/v projections of one input blob, side by side) -> Reshape (rows, n*H, D)
    -> Permute (n*H, rows, D) [-> Slice into n blobs of H heads] ... -> SDPA (H, T, D)
    -> Permute (T, H, D) -> Reshape (T, E) -> Gemm (output projection)
On the x86 pip runtime (1.0.20261020, one thread, fp32) MultiHeadAttention costs a few microseconds
more than this chain: chain / MultiHeadAttention time 0.72-0.76 at T=17 E=32 H=2, 0.80 at T=50 E=64,
0.85-0.88 at T=17 E=192 and E=256, 0.86 at T=197 E=64, 0.91 at T=50 E=128; from E=128 and T*E above
6400 they tie or the one layer wins (0.97-1.02 at T=64 E=128, 1.03 at T=128 E=128, 1.04 at T=64 E=256,
1.01 at T=197 E=384) (scripts/attention_forms.py). So an attention with static lengths and embed < 128
or T*E <= 6400 is expanded, and so is one with run-time lengths and embed < 128; larger ones and int8
layers keep the one layer. One walk.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.lowering.common import layer, new_tensor
from converter.lowering.transpose import ORDER_TYPE
from converter.ncnn_side.layers import SPECS

SMALL_EMBED = 128       # below this embed width the chain was faster at every length measured
SMALL_WORK = 6400       # rows * embed up to this: faster (T=50 E=128), above: a tie (T=64 E=128)
SWAP_OUTER = ORDER_TYPE[(3, (1, 0, 2))]      # (a, b, D) -> (b, a, D)
PER_COLUMN = 4          # Gemm's constant C: one value per output column
INFER = -1              # Reshape: the extent that holds the rest


def prefers_sdpa(rows: int | None, embed: int) -> bool:
    """`rows`: the longer of the query and key lengths, None for a run-time length."""
    return embed < SMALL_EMBED or rows is not None and rows * embed <= SMALL_WORK


def _gemm_params(rows: int | None, n: int, k: int) -> dict:
    """x (rows, k) times a constant B stored (n, k), plus one bias per column; rows 0: read from x."""
    return {2: 0, 3: 1, 4: 0, 5: 1, 6: 1, 7: rows or 0, 8: n, 9: k, 10: PER_COLUMN}


def _blob_roles(node: Node, attn_mask: int) -> list[int] | None:
    """Which input blob feeds q, k and v (one blob: self-attention; two: k and v share one)."""
    return {1: [0, 0, 0], 2: [0, 1, 1], 3: [0, 1, 2]}.get(len(node.inputs) - attn_mask)


def _heads(graph: Graph, node: Node, x: str, rows: int, parts: list, heads: int,
           stem: str) -> tuple[list[Node], list[str]]:
    """One Gemm computing `parts` (weight (E, K), bias (E,)) of blob x side by side, laid out as
    (n*H, rows, D) and cut into n blobs (1, H, rows, D)."""
    weight = np.concatenate([w for w, _ in parts])
    bias = np.concatenate([b for _, b in parts])
    n_out, k = weight.shape
    d = n_out // (len(parts) * heads)
    proj = new_tensor(graph, f"{stem}_proj", (1, rows, n_out), 0)
    split = new_tensor(graph, f"{stem}_split", (1, rows, len(parts) * heads, d), 0)
    laid = new_tensor(graph, f"{stem}_heads", (1, len(parts) * heads, rows, d), 0)
    nodes = [layer(node, graph, "Gemm", [x], [proj], _gemm_params(rows, n_out, k), [weight, bias],
                   suffix=f"_{stem}_gemm"),
             layer(node, graph, "Reshape", [proj], [split], {0: d, 1: len(parts) * heads, 2: rows or INFER},
                   suffix=f"_{stem}_reshape"),
             layer(node, graph, "Permute", [split], [laid], {0: SWAP_OUTER}, suffix=f"_{stem}_permute")]
    if len(parts) == 1:
        return nodes, [laid]
    outs = [new_tensor(graph, f"{stem}_{i}", (1, heads, rows, d), 0) for i in range(len(parts))]
    nodes.append(layer(node, graph, "Slice", [laid], outs, {0: [heads] * len(parts), 1: 0},
                       suffix=f"_{stem}_slice"))
    return nodes, outs


def _expand(graph: Graph, node: Node) -> list[Node] | None:
    p = SPECS["MultiHeadAttention"].resolve(node.params)
    roles = _blob_roles(node, p.attn_mask)
    embed, heads = p.embed_dim, p.num_heads
    if (p.quantize_term or p.kv_cache or roles is None or embed <= 0 or heads <= 0 or embed % heads
            or p.weight_data_size % embed or p.scale == 0.0):
        return None
    shapes = [graph.tensors[b].ncnn_shape for b in node.inputs[:max(roles) + 1]]
    if any(s is None or len(s) != 2 or s[1] is None for s in shapes):
        return None
    t, qdim = shapes[0]
    lengths = [s[0] for s in shapes]
    if not prefers_sdpa(None if None in lengths else max(lengths), embed):
        return None
    widths = (qdim, p.kdim, p.vdim)
    wq, bq, wk, bk, wv, bv, wo, bo = (np.asarray(w, np.float32).reshape(-1) for w in node.weights)
    parts = [(w.reshape(embed, width), b) for w, b, width in zip((wq, wk, wv), (bq, bk, bv), widths)]
    nodes, blobs = [], [None] * 3
    for blob in sorted(set(roles)):
        which = [i for i, r in enumerate(roles) if r == blob]
        made, outs = _heads(graph, node, node.inputs[blob], shapes[blob][0], [parts[i] for i in which],
                            heads, "".join("qkv"[i] for i in which))
        nodes += made
        for i, out in zip(which, outs):
            blobs[i] = out
    d = embed // heads
    scale = float(np.float32(1.0 / np.sqrt(np.float32(d)))) if p.scale is None else p.scale
    attended = new_tensor(graph, "attended", (1, heads, t, d), 0)
    rows = new_tensor(graph, "attended_rows", (1, t, heads, d), 0)
    merged = new_tensor(graph, "attended_merged", (1, t, embed), 0)
    mask = [node.inputs[-1]] if p.attn_mask else []
    nodes += [layer(node, graph, "SDPA", blobs + mask, [attended], {5: p.attn_mask, 6: scale}, suffix="_sdpa"),
              layer(node, graph, "Permute", [attended], [rows], {0: SWAP_OUTER}, suffix="_merge_permute"),
              layer(node, graph, "Reshape", [rows], [merged], {0: embed, 1: t or INFER}, suffix="_merge_reshape"),
              layer(node, graph, "Gemm", [merged], list(node.outputs), _gemm_params(t, qdim, embed),
                    [wo.reshape(qdim, embed), bo], suffix="_out_gemm")]
    return nodes


def expand_small_attention(graph: Graph) -> dict:
    expanded = 0
    for node in graph.topological():
        if node.op != "MultiHeadAttention" or not node.ncnn:
            continue
        chain = _expand(graph, node)
        if chain is None:
            continue
        graph.remove_node(node)
        for new in chain:
            graph.add_node(new)
        expanded += 1
    return {"attention_as_sdpa": expanded}

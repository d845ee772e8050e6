"""com.microsoft GroupQueryAttention (onnxruntime-genai's attention) -> ncnn RotaryEmbed + Concat +
SDPA, and com.microsoft RotaryEmbedding -> ncnn RotaryEmbed.

GroupQueryAttention takes the new tokens' query/key/value (packed in one [1, S, (H + 2G) * D]
tensor when key and value are absent), the past key/value [1, G, P, D], and gives the attention
output [1, S, H * D] and the present key/value [1, G, P + S, D]. With do_rotary its positions are
P .. P + S - 1 (batch 1, a mask of ones: what onnxruntime-genai feeds), rotated with the rows of
cos_cache/sin_cache [max positions, R / 2]; R < D rotates the first R of each head (partial).
Queries attend causally: query i sees keys 0 .. P + i (with local_window_size w, only the last
w of them, as onnxruntime computes it).

In ncnn (numpy order, no batch): query/key/value are sliced from the rows (S, width), made
(heads, S, D) by Reshape + Permute; RotaryEmbed reads the cos/sin rows P .. P + S - 1, cropped at
run time from the cache by the past's and the rows' extents (Crop 19/20 expressions). The present
is Concat(past, new) along the sequence: SDPA's own cache (7=kv_cache) returns a corrupted present
key in the pip runtime (1.0.20261020, x86; re-checked by tests/lowering/test_genai_decoders.py), so
SDPA runs without it. The causal mask (S, P + S) is built once per graph at run time: positions
1 .. P + S (a fill of ones summed), minus the query's own position (the last S of them), clipped
to [0, 1], times -1e30. A past of run-time length must be at least 1 there: ncnn holds no empty
blob (a Concat with one segfaulted), so a prompt is run with the past's extent fixed at 0
(--input-shape), which this lowering takes without a Concat.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import expression_list
from ..ir import Graph, Node
from converter.ncnn_side.layers import BINARY_OPS
from converter.shapes.symbolic import Ref, Renderer, op
from . import LOWERINGS, lowers
from .common import constant, fail, layer, new_tensor, reshape_layer

SWAP_SEQ_HEADS = 2          # Permute order_type: (a, b, w) -> (b, a, w)
MASKED = -1e30


def _heads(graph: Graph, src: Node, rows: str, heads: int, dim: int, layers: list, stem: str) -> str:
    """(S, heads * dim) rows -> (heads, S, dim)."""
    seq = graph.tensors[rows].ncnn_shape[0]
    split = new_tensor(graph, f"{stem}_split", (seq, heads, dim), None)
    layers.append(reshape_layer(graph, src, rows, split, {0: 0}, suffix=f"_{stem}_split"))
    out = new_tensor(graph, f"{stem}_heads", (heads, seq, dim), None)
    layers.append(layer(src, graph, "Permute", [split], [out], {0: SWAP_SEQ_HEADS}, suffix=f"_{stem}_heads"))
    return out


def _unpacked(graph: Graph, table: str) -> str:
    """The table with one zero row more when its row count is a multiple of 4: ncnn packs such a blob
    anew for every layer that reads it (8 rows a pack on AVX); 48 Crops of Qwen2.5-0.5B's 32768-row
    tables took 15 ms a decode step, 0.6 ms from 32769 rows (pip 1.0.20261020, x86). Never cropped:
    positions stay below the table's own rows."""
    value = graph.value(table)
    if value.shape[0] % 4:
        return table
    return _shared(graph, ("unpacked", table), lambda: graph.add_constant(
        f"{table}_rows", np.concatenate([value, np.zeros_like(value[:1])])).name)


def _cache_rows(graph: Graph, src: Node, table: str, start, count, layers: list, stem: str) -> str:
    """Rows start .. start + count - 1 of a constant (positions, R/2) table, cropped at run time."""
    table = _unpacked(graph, table)
    value = graph.value(table)
    renderer = Renderer(graph, table, src)
    begin, end = renderer.render(start), renderer.render(op("+", start, count))
    rows = new_tensor(graph, f"{stem}_rows", (None, value.shape[1]), None)
    layers.append(layer(src, graph, "Crop", renderer.bottoms, [rows],
                        {19: expression_list([begin]), 20: expression_list([end]), 21: expression_list([0])},
                        suffix=f"_{stem}"))
    return rows


def _rotate(graph: Graph, src: Node, x: str, cos: str, sin: str, rotary: int, interleaved: int,
            layers: list, stem: str) -> str:
    """RotaryEmbed over the first `rotary` of each head's dims (all of them when equal)."""
    heads, seq, dim = graph.tensors[x].ncnn_shape
    out = new_tensor(graph, f"{stem}_rot", (heads, seq, dim), None)
    if rotary == dim:
        layers.append(layer(src, graph, "RotaryEmbed", [x, cos, sin], [out], {0: interleaved}, suffix=f"_{stem}"))
        return out
    part, rest, turned = (new_tensor(graph, f"{stem}_{t}", (heads, seq, d), None)
                          for t, d in (("part", rotary), ("pass", dim - rotary), ("turned", rotary)))
    layers += [layer(src, graph, "Slice", [x], [part, rest], {0: [rotary, -233], 1: 2}, suffix=f"_{stem}_rotary_part"),
               layer(src, graph, "RotaryEmbed", [part, cos, sin], [turned], {0: interleaved}, suffix=f"_{stem}"),
               layer(src, graph, "Concat", [turned, rest], [out], {0: 2}, suffix=f"_{stem}_join")]
    return out


def _causal_mask(graph: Graph, src: Node, key: str, rows: str, layers: list, window: int | None) -> str:
    """(S, T) zeros where key j <= P + i (and, with a window, P + i - j < window), MASKED elsewhere;
    T = key's extent, S = the rows'."""
    total, seq = Ref(key, 2), Ref(rows, 1)
    one = graph.add_constant(f"{src.name}_one", np.ones(1, np.float32)).name
    renderer = Renderer(graph, one, src)
    size = expression_list([renderer.render(total), renderer.render(1)])
    ones, counts, flat = (new_tensor(graph, f"{src.name}_mask_{t}", shape, None) for t, shape in
                          (("ones", (1, 1, None)), ("counts", (1, 1, None)), ("flat", (1, None))))
    layers += [layer(src, graph, "Interp", renderer.bottoms, [ones], {0: 1, 9: size}, suffix="_mask_fill"),
               layer(src, graph, "CumulativeSum", [ones], [counts], {0: -1}, suffix="_mask_count"),
               reshape_layer(graph, src, counts, flat, {1: 2}, suffix="_mask_flat")]
    crop = Renderer(graph, flat, src)
    begin = crop.render(op("-", Ref(flat, 1), seq))
    own = new_tensor(graph, f"{src.name}_mask_own", (1, None), None)
    layers.append(layer(src, graph, "Crop", crop.bottoms, [own],
                        {19: expression_list([begin]), 20: expression_list([crop.render(Ref(flat, 1))]),
                         21: expression_list([1])}, suffix="_mask_own"))
    column = new_tensor(graph, f"{src.name}_mask_col", (None, 1), None)
    layers.append(reshape_layer(graph, src, own, column, {0: 1}, suffix="_mask_col"))
    diff, clipped, mask = (new_tensor(graph, f"{src.name}_mask_{t}", (None, None), None)
                           for t in ("diff", "clip", "add"))
    layers += [layer(src, graph, "BinaryOp", [flat, column], [diff], {0: BINARY_OPS["sub"]}, suffix="_mask_diff"),
               layer(src, graph, "Clip", [diff], [clipped], {0: 0.0, 1: 1.0}, suffix="_mask_clip")]
    if window is not None:      # also masked: keys `window` or more before the query (P + i - j >= window)
        early, early_clipped, both = (new_tensor(graph, f"{src.name}_mask_{t}", (None, None), None)
                                      for t in ("early", "early_clip", "both"))
        layers += [layer(src, graph, "BinaryOp", [diff], [early], {0: BINARY_OPS["rsub"], 1: 1, 2: float(1 - window)},
                         suffix="_mask_early"),
                   layer(src, graph, "Clip", [early], [early_clipped], {0: 0.0, 1: 1.0}, suffix="_mask_early_clip"),
                   layer(src, graph, "BinaryOp", [clipped, early_clipped], [both], {0: BINARY_OPS["add"]},
                         suffix="_mask_both")]
        clipped = both
    layers.append(layer(src, graph, "BinaryOp", [clipped], [mask], {0: BINARY_OPS["mul"], 1: 1, 2: MASKED},
                        suffix="_mask"))
    return mask


def _shared(graph: Graph, key: tuple, make) -> str:
    """One blob per graph for what every attention layer computes alike (cos/sin rows, the mask)."""
    cache = graph.meta.setdefault("genai_shared", {})
    if key not in cache or cache[key] not in graph.tensors:
        cache[key] = make()
    return cache[key]


@lowers("GroupQueryAttention")
def group_query_attention(graph: Graph, node: Node) -> list[Node]:
    ins = list(node.inputs) + [""] * 12
    outs = list(node.outputs) + [""] * 3
    heads, groups = int(node.attrs["num_heads"]), int(node.attrs["kv_num_heads"])
    window = int(node.attrs.get("local_window_size", -1) or -1)
    window = window if window > 0 else None
    if float(node.attrs.get("softcap", 0.0) or 0.0) != 0.0:
        raise fail(node, graph, "softcap is not supported: ncnn's SDPA has no score cap")
    for slot, what in ((9, "position_ids"), (10, "attention_bias"), (11, "head_sink")):
        if ins[slot]:
            raise fail(node, graph, f"the {what} input is not supported")
    x = graph.tensors[ins[0]]
    if x.shape is None or x.rank != 3 or x.batch_axis != 0 or len(x.ncnn_shape) != 2:
        raise fail(node, graph, f"query '{x.name}' must be [batch 1, sequence, width], got {x.shape}")
    layers: list[Node] = []
    if ins[1]:
        q_rows, k_rows, v_rows = ins[0], ins[1], ins[2]
        dim = x.shape[2] // heads
    else:
        dim = x.shape[2] // (heads + 2 * groups)
        seq = x.ncnn_shape[0]
        q_rows, k_rows, v_rows = (new_tensor(graph, f"{node.name}_{t}", (seq, n * dim), None)
                                  for t, n in (("q", heads), ("k", groups), ("v", groups)))
        layers.append(layer(node, graph, "Slice", [x.name], [q_rows, k_rows, v_rows],
                            {0: [heads * dim, groups * dim, groups * dim], 1: 1}, suffix="_qkv"))
    q = _heads(graph, node, q_rows, heads, dim, layers, "q")
    k = _heads(graph, node, k_rows, groups, dim, layers, "k")
    v = _heads(graph, node, v_rows, groups, dim, layers, "v")
    past_k, past_v = ins[3], ins[4]
    static_empty = bool(past_k) and graph.tensors[past_k].shape is not None and graph.tensors[past_k].shape[2] == 0
    has_past = bool(past_k) and not static_empty
    if node.attrs.get("do_rotary", 0):
        cos_table = constant(graph, node, 7, "cos_cache")
        sin_table = constant(graph, node, 8, "sin_cache")
        if cos_table.shape != sin_table.shape or cos_table.ndim != 2 or 2 * cos_table.shape[1] > dim:
            raise fail(node, graph, f"cos/sin caches of shapes {cos_table.shape}, {sin_table.shape} do not fit "
                                    f"heads of {dim}")
        start = Ref(past_k, 2) if has_past else 0
        rows = (_shared(graph, ("rows", ins[t], start), lambda t=t: _cache_rows(
            graph, node, ins[t], start, Ref(x.name, 1), layers, f"{node.name}_{'cos' if t == 7 else 'sin'}"))
            for t in (7, 8))
        cos, sin = rows
        rotary, interleaved = 2 * cos_table.shape[1], int(node.attrs.get("rotary_interleaved", 0))
        q = _rotate(graph, node, q, cos, sin, rotary, interleaved, layers, "q")
        k = _rotate(graph, node, k, cos, sin, rotary, interleaved, layers, "k")
    keys = []
    for new, past, present, what in ((k, past_k, outs[1], "key"), (v, past_v, outs[2], "value")):
        shape = (groups, None, dim)
        target = present if present else new_tensor(graph, f"{node.name}_{what}", shape, None)
        if has_past:
            layers.append(layer(node, graph, "Concat", [past, new], [target], {0: 1}, suffix=f"_{what}_cache"))
        else:
            layers.append(layer(node, graph, "Noop", [new], [target], suffix=f"_{what}_cache"))
        keys.append(target)
    scale = float(node.attrs.get("scale", 0.0) or 0.0)
    inputs = [q, *keys]
    one_row = x.ncnn_shape[0] == 1 and window is None
    if not one_row:
        inputs.append(_shared(graph, ("mask", has_past, window),
                              lambda: _causal_mask(graph, node, keys[0], x.name, layers, window)))
    attended = new_tensor(graph, f"{node.name}_attended", (heads, x.ncnn_shape[0], dim), None)
    layers.append(layer(node, graph, "SDPA", inputs, [attended], {5: int(not one_row), 6: scale}, suffix="_sdpa"))
    back = new_tensor(graph, f"{node.name}_rows", (x.ncnn_shape[0], heads, dim), None)
    layers.append(layer(node, graph, "Permute", [attended], [back], {0: SWAP_SEQ_HEADS}, suffix="_rows"))
    layers.append(reshape_layer(graph, node, back, outs[0], {0: 0}, suffix="_merge"))
    return layers


@lowers("RotaryEmbedding")
def rotary_embedding(graph: Graph, node: Node) -> list[Node]:
    """x [1, S, H*D] or [1, H, S, D] rotated at position_ids [1, S] (rows of the caches gathered by
    an ncnn Embed, the positions being an integer input) or at a scalar start position."""
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if node.attrs.get("is_packed_batching", 0):
        raise fail(node, graph, "packed batching is not supported")
    cos_table, sin_table = constant(graph, node, 2, "cos_cache"), constant(graph, node, 3, "sin_cache")
    half = cos_table.shape[-1]
    positions = graph.tensors[node.inputs[1]]
    if x.shape is None or x.batch_axis != 0 or x.rank not in (3, 4):
        raise fail(node, graph, f"input '{x.name}' must be [batch 1, S, H*D] or [batch 1, H, S, D], got {x.shape}")
    if positions.shape is None or positions.rank != 2:
        raise fail(node, graph, "position_ids must be [batch, sequence] (a scalar start is not supported)")
    layers: list[Node] = []
    rows = []
    for slot, table in ((2, cos_table), (3, sin_table)):
        picked = new_tensor(graph, f"{node.name}_{slot}_rows", (1, positions.shape[1], half), 0)
        layers += LOWERINGS["Gather"](graph, Node(f"{node.name}_rows{slot}", "Gather",
                                                  [node.inputs[slot], positions.name], [picked], {"axis": 0},
                                                  origin=node.origin or node.name))
        rows.append(picked)
    interleaved = int(node.attrs.get("interleaved", 0))
    if x.rank == 4:
        heads, dim = x.shape[1], x.shape[3]
        rotated = _rotate(graph, node, x.name, rows[0], rows[1], int(node.attrs.get("rotary_embedding_dim", 0))
                          or 2 * half, interleaved, layers, "x")
        layers.append(layer(node, graph, "Noop", [rotated], [out.name], suffix="_out"))
        return layers
    heads = int(node.attrs.get("num_heads", 0)) or x.shape[2] // (2 * half)
    dim = x.shape[2] // heads
    split = _heads(graph, node, x.name, heads, dim, layers, "x")
    rotated = _rotate(graph, node, split, rows[0], rows[1], int(node.attrs.get("rotary_embedding_dim", 0))
                      or 2 * half, interleaved, layers, "x")
    back = new_tensor(graph, f"{node.name}_back", (x.ncnn_shape[0], heads, dim), None)
    layers.append(layer(node, graph, "Permute", [rotated], [back], {0: SWAP_SEQ_HEADS}, suffix="_back"))
    layers.append(reshape_layer(graph, node, back, out.name, {0: 0}, suffix="_merge"))
    return layers

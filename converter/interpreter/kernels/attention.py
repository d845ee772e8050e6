"""MultiHeadAttention and SDPA (scaled dot-product attention), as pnnx writes them.

Blobs are 2-D (seq, dim) rows for MultiHeadAttention and 3-D (heads, seq, dim) for SDPA.
Both add the mask to the scaled scores and take ncnn's softmax (x - max, exp, / sum).
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _add_mask(scores: np.ndarray, mask: np.ndarray | None, per_head: bool) -> np.ndarray:
    """scores (heads, src, dst) + a (src, dst) mask, or one per head when `per_head`."""
    if mask is None:
        return scores
    want = scores.shape if per_head else scores.shape[1:]
    if mask.shape != want and mask.shape != (1, *scores.shape[1:]):
        fail(f"attention mask {shape_str(mask)} does not fit scores of shape {scores.shape}")
    return scores + (mask if per_head else mask.reshape(scores.shape[1:]))


def _mha_blob_roles(n_inputs: int, attn_mask: int) -> tuple[int, int, int]:
    """Indexes of the q, k, v blobs (ncnn: one blob is self-attention, two share k and v)."""
    n_qkv = n_inputs - (1 if attn_mask else 0)
    roles = {1: (0, 0, 0), 2: (0, 1, 1), 3: (0, 1, 2)}.get(n_qkv)
    if roles is None:
        fail(f"MultiHeadAttention takes 1-3 q/k/v blobs (+ a mask), got {n_inputs} blobs")
    return roles


@kernel("MultiHeadAttention", prepare=True)
def multiheadattention(p, weights):
    if p.quantize_term:
        fail("quantized MultiHeadAttention is not supported by the interpreter")
    if p.kv_cache:
        fail("MultiHeadAttention with kv_cache is not supported by the interpreter")
    embed, heads = p.embed_dim, p.num_heads
    if embed <= 0 or heads <= 0 or embed % heads or p.weight_data_size % embed:
        fail(f"MultiHeadAttention embed_dim {embed}, num_heads {heads}, weight_data_size "
             f"{p.weight_data_size} do not split into heads")
    qdim = p.weight_data_size // embed
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    wq, wk, wv = wq.reshape(embed, qdim).T, wk.reshape(embed, p.kdim).T, wv.reshape(embed, p.vdim).T
    wo = wo.reshape(qdim, embed).T
    scale = F32(1.0 / np.sqrt(np.float32(embed // heads))) if p.scale is None else F32(p.scale)
    per_head = embed // heads

    def heads_of(rows: np.ndarray) -> np.ndarray:        # (seq, embed) -> (heads, seq, per_head)
        return rows.reshape(rows.shape[0], heads, per_head).transpose(1, 0, 2)

    def step(*xs):
        iq, ik, iv = _mha_blob_roles(len(xs), p.attn_mask)
        q, k, v = xs[iq], xs[ik], xs[iv]
        for x, width, what in ((q, qdim, "q"), (k, p.kdim, "k"), (v, p.vdim, "v")):
            if x.ndim != 2 or x.shape[1] != width:
                fail(f"MultiHeadAttention {what} must be (seq, {width}), got {shape_str(x)}")
        if k.shape[0] != v.shape[0]:
            fail(f"MultiHeadAttention k {shape_str(k)} and v {shape_str(v)} differ in length")
        qa = heads_of((q @ wq + bq) * scale)
        ka, va = heads_of(k @ wk + bk), heads_of(v @ wv + bv)
        mask = xs[-1] if p.attn_mask else None
        scores = _add_mask(qa @ ka.transpose(0, 2, 1), mask, mask is not None and mask.ndim == 3)
        attended = _softmax_rows(scores) @ va                       # (heads, src, per_head)
        return attended.transpose(1, 0, 2).reshape(q.shape[0], embed) @ wo + bo
    return step


@kernel("SDPA")
def sdpa(p, weights, query, key, value, *rest):
    if p.int8_scale_term:
        fail("int8 SDPA is not supported by the interpreter")
    if p.kv_cache:
        # the pip runtime (1.0.20261020, x86) returns uninitialized memory for the joined
        # key/value and attends over it: nothing exact to follow
        fail("SDPA with kv_cache computes garbage in the real ncnn runtime; not supported")
    mask = rest[0] if p.attn_mask and rest else None
    if p.attn_mask and mask is None:
        fail("SDPA with attn_mask=1 needs a mask blob")
    for x, what in ((query, "query"), (key, "key"), (value, "value")):
        if x.ndim != 3:
            fail(f"SDPA {what} must be 3-D (heads, seq, dim), got {shape_str(x)}")
    heads, groups = query.shape[0], key.shape[0]
    if (key.shape[2] != query.shape[2] or value.shape[:2] != key.shape[:2]
            or groups == 0 or heads % groups):
        fail(f"SDPA shapes do not fit: query {shape_str(query)}, key {shape_str(key)}, "
             f"value {shape_str(value)}")
    scale = F32(1.0 / np.sqrt(np.float32(query.shape[2]))) if p.scale == 0 else F32(p.scale)
    repeat = heads // groups
    k = np.repeat(key, repeat, axis=0) if repeat > 1 else key
    v = np.repeat(value, repeat, axis=0) if repeat > 1 else value
    scores = (query @ k.transpose(0, 2, 1)) * scale
    if mask is not None:
        per_head = mask.ndim == 3 and mask.shape[0] > 1
        scores = _add_mask(scores, mask, per_head)
    return _softmax_rows(scores) @ v

"""Fuse a decoder's attention over its (concatenated) cache into one ncnn SDPA layer, grouped-query
heads read straight from the cache, as torch exports Hugging Face's eager attention:

    k4 = Reshape(Expand(Unsqueeze(k, 2), [1, 1, r, 1, 1]), (1, H, S, D))   repeat_kv (absent when r = 1)
    p  = Softmax(MatMul(q, Transpose(k4, [0, 1, 3, 2])) * scale + m1 + m2 ...)   q (1, H, T, D)
    y  = MatMul(p, v4)                                                       v4 likewise from v (1, G, S, Dv)

ncnn's SDPA computes softmax(q k^T * scale + mask) v per head, head h reading kv head h // (H / G):
the numbers of repeat_kv's head order. What is added after the scale becomes its mask, summed: a
causal or padding mask (1, 1, T, S) shared by the heads (squeezed to ncnn's (T, S)), T5's relative
position bias (1, H, T, S) per head (ncnn's (H, T, S)); zeros (T5's cross-attention bias, a
ConstantOfShape of 0) are dropped. No addend at all (a decode step whose causal mask folded away:
Whisper's, TrOCR's) is SDPA without a mask where a length is a run-time one (static unmasked blocks
are fuse_sdpa's). Also taken: heads as a batch, (H, T, D) x (H, D, S) (BART-style bmm, TrOCR),
through Reshapes that only add or drop leading ones around the mask; k^T written from (1, S, H, D) by
one Transpose (T5's encoder), which becomes a Transpose writing k.

A mask must have one row per query (proven by SymbolicShapes, or in a decoder step input_ids' length:
one query row per new token) and one column per key (the keys' term, or a sum over the inputs'
extents where a Reshape's own symbol hides the keys' one): a row or a column broadcast, a mask per
batch, a mask added before the scale, a Softmax over another axis, or an intermediate read elsewhere
leave the nodes alone. Masked SDPA computes other numbers before 20261020 (releases.py): for an older
--target-ncnn only unmasked attention fuses. The cache itself stays a Concat in the graph: SDPA's
kv_cache=1 corrupts the present key in the pip runtime (tests/decoders/test_sdpa_kv_cache.py). One
walk over the Softmax nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.decoder_layout import past_inputs, present_outputs
from converter.shapes.symbolic import Op, Ref, refs
from converter.shapes.symbolic_shapes import SymbolicShapes

from converter.rewrite.attention_probe import NoMatch
from converter.rewrite.patterns import read_only_inside as _inner
from converter.rewrite.attention_probe import passes_float_on, scores_and_addends
from converter.ncnn_side.releases import NEWEST, PARAMS
from converter.shapes.runtime_fill import FILL_VALUE, fill_value
from converter.rewrite.patterns import sole_reader
from converter.rewrite.sdpa_guard import guarded_mask, nan_guard, unscaled


def _kv_heads(graph: Graph, name: str, heads: int) -> tuple[str, list[Node]] | None:
    """(kv (1, G, S, D), repeat nodes) for name (1, H, S, D) = repeat_kv(kv, H // G), or (name, [])."""
    t = graph.tensors[name]
    reshape = graph.producer(name)
    expand = None if reshape is None or reshape.op != "Reshape" or reshape.ncnn else graph.producer(reshape.inputs[0])
    unsq = None if expand is None or expand.op != "Expand" or expand.ncnn else graph.producer(expand.inputs[0])
    if unsq is None or unsq.op != "Unsqueeze" or unsq.ncnn:     # no repeat_kv: the heads themselves
        return (name, []) if t.shape is not None and _heads_view(t) and t.shape[-3] == heads else None
    axes = graph.value(unsq.inputs[1]) if len(unsq.inputs) > 1 else np.array(unsq.attrs.get("axes", []))
    target, kv = graph.value(expand.inputs[1]), graph.tensors[unsq.inputs[0]]
    if axes is None or axes.reshape(-1).tolist() != [2] or target is None or target.size != 5 \
            or kv.rank != 4 or kv.shape[1] is None or t.shape is None or t.rank != 4:
        return None
    r = int(target.reshape(-1)[2])
    if any(int(v) not in (1, kv.shape[i if i < 2 else i - 1] or -1) for i, v in enumerate(target.reshape(-1))
           if i != 2) or kv.shape[1] * r != heads or t.shape[1] != heads:
        return None
    return kv.name, [unsq, expand, reshape]


def _zero(graph: Graph, name: str) -> bool:
    """A tensor of zeros (a constant, or a ConstantOfShape of 0: T5's cross-attention position bias)."""
    value, node = graph.value(name), graph.producer(name)
    if value is not None:
        return value.dtype == np.float32 and not value.any()
    if node is None or node.ncnn or node.op != "ConstantOfShape":
        return False
    fill = node.meta[FILL_VALUE] if FILL_VALUE in node.meta else fill_value(node)
    return fill == 0.0 and graph.tensors[name].dtype == np.float32


def _heads_view(t: Tensor) -> bool:
    """ncnn holds the tensor as (heads, rows, cols): (1, H, T, D) with the batch axis first, or
    (H, T, D) without one (BART-style attention batches the heads)."""
    return t.rank == 4 and t.batch_axis == 0 or t.rank == 3 and t.batch_axis is None


def _mask_fits(graph: Graph, name: str, heads: int, shapes: SymbolicShapes, rows, keys) -> bool:
    """An addend SDPA reads as it is: float (1, 1|H, T, S) or (1|H, T, S), one row per query and one
    column per key (a row or a column broadcast, or a mask per batch, is read otherwise by ncnn)."""
    m, dims = graph.tensors[name], shapes.dims.get(name)
    if dims is None and m.shape is not None and None not in m.shape:
        dims = m.shape                  # a constant (a static model's position bias, folded) has no terms
    if m.rank not in (3, 4) or m.dtype != np.float32 or dims is None:
        return False
    dims, shape = (1,) * (4 - m.rank) + tuple(dims), (1,) * (4 - m.rank) + tuple(m.shape)
    return dims[0] == 1 and dims[1] in (1, heads) and dims[2] in rows and _columns_fit(graph, dims[3], keys) \
        and (shape[2] != 1 or rows[0] == 1) and (shape[3] != 1 or keys == 1) \
        and (m.rank == 4 or m.batch_axis is None)


def _clamped(term) -> bool:
    return isinstance(term, Op) and (term.name in ("max", "min") or _clamped(term.a) or _clamped(term.b))


def _columns_fit(graph: Graph, cols, keys) -> bool:
    """The mask has one column per key: the same term, or, where the keys' term went through a
    symbol of its own (a Reshape's that the terms cannot follow: a decoder's second layer), a mask
    whose columns are an input's extent or a sum over them (past + new tokens), never a broadcast 1;
    an input's extent alone (one that may be 1 where the keys are more) only where no past is read:
    a decoder step without one (a merged decoder's prefill branch: its keys are the new tokens) or a
    model with no cache at all (an encoder, whose keys are its tokens)."""
    if cols == keys:
        return True
    # a symbol of its own, or a clamped length the terms cannot compare (a sliding window's cache cut to
    # min(P, window - 1) rows, written max(0, P - max(0, P - window + 1)))
    lost = any(r.tensor not in graph.inputs for r in refs(keys)) or _clamped(keys)
    found = refs(cols) if isinstance(cols, (Op, Ref)) else ()
    if not lost or not found or not all(r.tensor in graph.inputs for r in found):
        return False
    if isinstance(cols, Op):
        return True
    pasts = past_inputs(graph.inputs)
    no_past_read = not any(graph.consumers(n) for n in pasts)
    return no_past_read and (bool(present_outputs(graph.outputs)) or not pasts)


def _match(graph: Graph, softmax: Node, shapes: SymbolicShapes, new_tokens, masked_ok: bool):
    x = graph.tensors[softmax.inputs[0]]
    if x.rank not in (3, 4) or softmax.attrs.get("axis", -1) % x.rank != x.rank - 1:
        return None
    try:
        qk, score_nodes, scale, addends = scores_and_addends(graph, softmax, shapes)
    except NoMatch:
        return None
    # the scale split over q and k^T (torch.onnx's scaled_dot_product_attention: q * sqrt(s), k^T * sqrt(s))
    (q_name, q_scale, q_nodes), (kt_name, k_scale, k_nodes) = unscaled(graph, qk.inputs[0]), unscaled(graph, qk.inputs[1])
    q, kt, scale = graph.tensors[q_name], graph.producer(kt_name), scale * q_scale * k_scale
    swap = list(range(q.rank - 2)) + [q.rank - 1, q.rank - 2]
    if not _heads_view(q) or q.shape[-3] is None or q.dtype != np.float32 or kt is None \
            or kt.op != "Transpose" or kt.ncnn or sorted(kt.attrs.get("perm") or ()) != list(range(q.rank)):
        return None
    perm = list(kt.attrs["perm"])
    heads, q_dims = q.shape[-3], shapes.dims.get(q.name)
    masks = [a for a in addends if not _zero(graph, a)]
    if masks and not masked_ok or not masks and None not in x.shape:     # static and unmasked: fuse_sdpa's
        return None
    nodes, probs = [*score_nodes, *q_nodes, *k_nodes, kt, softmax], softmax.outputs[0]
    guard = nan_guard(graph, probs)     # Where(IsNaN(p), 0, p): sdpa_guard.py computes it from the mask
    if guard is not None:
        if len(masks) > 1:
            return None
        probs, nodes = guard[0], nodes + guard[1]
    reader = sole_reader(graph, probs, "MatMul", "Cast", "Identity", "Dropout")
    while reader is not None and reader.op != "MatMul" and passes_float_on(graph, reader):
        nodes.append(reader)
        probs = reader.outputs[0]
        reader = sole_reader(graph, probs, "MatMul", "Cast", "Identity", "Dropout")
    if reader is None or reader.op != "MatMul" or reader.inputs[0] != probs \
            or graph.tensors[reader.outputs[0]].rank != q.rank or not _heads_view(graph.tensors[reader.outputs[0]]):
        return None
    # k^T from k (1, H, S, D) by swapping the last two axes; another perm (heads split and k^T
    # written by one Transpose, T5's encoder) gets a Transpose writing k itself
    k = _kv_heads(graph, kt.inputs[0], heads) if perm == swap else (kt.inputs[0], [])
    v = _kv_heads(graph, reader.inputs[1], heads)
    if k is None or v is None or perm == swap and graph.tensors[k[0]].shape[-1] != q.shape[-1]:
        return None
    keys = shapes.dims.get(k[0]) if perm == swap else _swapped(shapes.dims.get(kt.outputs[0]))
    # one mask row per query, one column per key
    if q_dims is None or keys is None or not all(
            _mask_fits(graph, m, heads, shapes, (q_dims[-2], new_tokens), keys[-2]) for m in masks):
        return None
    nodes += [reader, *k[1], *v[1]]
    if not _inner(graph, nodes, reader):
        return None
    if perm != swap:
        k_perm = perm[:-2] + [perm[-1], perm[-2]]
        kt_t = graph.tensors[kt.outputs[0]]
        shape = (*kt_t.shape[:-2], kt_t.shape[-1], kt_t.shape[-2])
        source = graph.tensors[kt.inputs[0]].batch_axis
        batch = None if source is None else k_perm.index(source)
        if shape[-3] != heads or not _heads_view(Tensor("k", shape, np.dtype(np.float32), batch_axis=batch)) \
                or shape[-1] != q.shape[-1]:
            return None
        k = ((kt.inputs[0], k_perm, shape, batch), [])
    return q.name, k[0], v[0], masks, scale, nodes, reader.outputs[0], guard is not None and bool(masks)


def _swapped(dims):
    return None if dims is None else (*dims[:-2], dims[-1], dims[-2])


def _mask_blob(graph: Graph, masks: list[str], stem: str, new: list[Node]) -> str:
    """The sum of the addends as SDPA's mask: ncnn's (T, S) shared by every head, or (H, T, S).
    Sums are ONNX Adds and the rank changes Squeezes, lowered later."""
    mask = masks[0]
    for other in masks[1:]:
        a, b = graph.tensors[mask], graph.tensors[other]
        pa, pb = ((1,) * (4 - t.rank) + tuple(t.shape) for t in (a, b))
        shape = tuple(y if x == 1 else x for x, y in zip(pa, pb))[4 - max(a.rank, b.rank):]
        batch = 0 if len(shape) == 4 and 0 in (a.batch_axis, b.batch_axis) else None
        total = _blob(graph, f"{stem}_mask_sum", shape, batch)
        new.append(Node(graph.fresh_name(f"{stem}_mask_sum"), "Add", [mask, other], [total]))
        mask = total
    m = graph.tensors[mask]
    if m.rank == 3 or m.rank == 4 and m.shape[1] != 1 and m.batch_axis == 0:
        return mask
    per_head = m.shape[1] != 1          # (H, T, S) without a batch axis; else (1, T, S) with one
    rows = _blob(graph, f"{mask}_rows", m.shape[1:] if per_head else m.shape[:1] + m.shape[2:],
                 None if per_head else 0)
    axes = graph.add_constant(f"{mask}_squeezed_axis", np.array([0 if per_head else 1], np.int64)).name
    new.append(Node(graph.fresh_name(f"{stem}_mask"), "Squeeze", [mask, axes], [rows]))
    return rows


def _blob(graph: Graph, stem: str, shape: tuple, batch: int | None) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), shape, np.dtype(np.float32), batch_axis=batch)).name


def fuse_decoder_attention(graph: Graph) -> dict:
    softmaxes = list(graph.onnx_nodes_of("Softmax"))
    if not softmaxes:
        return {"decoder_attention_fused": 0}
    shapes = SymbolicShapes(graph)
    for node in graph.topological():
        shapes.visit(node)
    # a decoder step's query has one row per new token: a mask with input_ids' length as its rows fits
    ids = shapes.dims.get("input_ids")
    new_tokens = ids[1] if ids is not None and len(ids) == 2 and not isinstance(ids[1], int) else False
    target = getattr(graph, "ncnn_target", None) or NEWEST
    masked_ok = target >= PARAMS[("SDPA", 5)]       # masked SDPA is wrong before (NCNN_NOTES)
    fused, guards = 0, {}
    for softmax in softmaxes:
        found = _match(graph, softmax, shapes, new_tokens, masked_ok) if softmax.name in graph.nodes else None
        if found is None:
            continue
        q, k, v, masks, scale, nodes, out, guarded = found
        new = []
        if guarded:     # the mask clamped, the output times r (converter/rewrite/sdpa_guard.py)
            masks[0], rows = guarded_mask(graph, masks[0], guards, softmax.origin or softmax.name)
            sdpa_out = _blob(graph, f"{out}_unguarded", graph.tensors[out].shape, graph.tensors[out].batch_axis)
            new.append(Node(graph.fresh_name(f"{softmax.name}_guard"), "Mul", [sdpa_out, rows], [out]))
            out = sdpa_out
        if isinstance(k, tuple):        # k written by a Transpose of its own (the perm k^T's, last two swapped)
            source, k_perm, shape, batch = k
            k = _blob(graph, f"{softmax.name}_k", shape, batch)
            new.append(Node(graph.fresh_name(f"{softmax.name}_k"), "Transpose", [source], [k], {"perm": k_perm}))
        inputs = [q, k, v] + ([_mask_blob(graph, masks, softmax.name, new)] if masks else [])
        new.append(Node(graph.fresh_name(f"{softmax.name}_sdpa"), "SDPA", inputs, [out],
                        params={5: int(bool(masks)), 6: float(scale)}, ncnn=True, origin=softmax.origin or softmax.name))
        graph.replace_nodes(nodes, new)
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"decoder_attention_fused": fused}

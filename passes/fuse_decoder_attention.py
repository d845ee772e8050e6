"""Fuse a decoder's masked attention over its (concatenated) cache into one ncnn SDPA layer, grouped-
query heads read straight from the cache, as torch exports Hugging Face's eager attention:

    k4 = Reshape(Expand(Unsqueeze(k, 2), [1, 1, r, 1, 1]), (1, H, S, D))   repeat_kv (absent when r = 1)
    p  = Softmax(MatMul(q, Transpose(k4, [0, 1, 3, 2])) * scale + mask)      q (1, H, T, D), mask (1, 1, T, S)
    y  = MatMul(p, v4)                                                       v4 likewise from v (1, G, S, Dv)

ncnn's SDPA computes softmax(q k^T * scale + mask) v per head, head h reading kv head h // (H / G):
the numbers of repeat_kv's head order. Its mask is 2-D (T, S), so the (1, 1, T, S) mask (one for all
heads) is squeezed; a mask whose row count is not proven to be q's T (SymbolicShapes; or, in a
decoder step, input_ids' length: one query row per new token) such as one row broadcast to all, a
mask per head, a Softmax over another axis, or an intermediate read
elsewhere leave the nodes alone (fuse_sdpa may still take an unmasked block with static shapes).
The cache itself stays a Concat in the graph: SDPA's kv_cache=1 corrupts the present key in the
pip runtime (tests/interpreter/test_rotaryembed.py). One walk over the Softmax nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.symbolic_shapes import SymbolicShapes

from converter.rewrite.attention_probe import NoMatch
from converter.rewrite.patterns import read_only_inside as _inner
from converter.rewrite.attention_probe import attention_scores, passes_float_on
from converter.rewrite.patterns import sole_reader


def _kv_heads(graph: Graph, name: str, heads: int) -> tuple[str, list[Node]] | None:
    """(kv (1, G, S, D), repeat nodes) for name (1, H, S, D) = repeat_kv(kv, H // G), or (name, [])."""
    t = graph.tensors[name]
    reshape = graph.producer(name)
    if reshape is None or reshape.op != "Reshape" or reshape.ncnn:
        return (name, []) if t.shape is not None and t.rank == 4 and t.shape[1] == heads else None
    expand = graph.producer(reshape.inputs[0])
    unsq = None if expand is None or expand.op != "Expand" else graph.producer(expand.inputs[0])
    if unsq is None or unsq.op != "Unsqueeze" or expand.ncnn or unsq.ncnn:
        return None
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


def _match(graph: Graph, softmax: Node, shapes: SymbolicShapes, new_tokens):
    x = graph.tensors[softmax.inputs[0]]
    if x.rank != 4 or softmax.attrs.get("axis", -1) % 4 != 3:
        return None
    try:
        qk, score_nodes, scale, mask = attention_scores(graph, softmax)
    except NoMatch:
        return None
    q, kt = graph.tensors[qk.inputs[0]], graph.producer(qk.inputs[1])
    if mask is None or q.rank != 4 or q.batch_axis != 0 or q.shape[1] is None or q.dtype != np.float32 \
            or kt is None or kt.op != "Transpose" or kt.ncnn or kt.attrs.get("perm") != [0, 1, 3, 2]:
        return None
    heads = q.shape[1]
    m = graph.tensors[mask]
    m_dims, q_dims = shapes.dims.get(mask), shapes.dims.get(q.name)
    if m.rank != 4 or m.shape[:2] != (1, 1) or m.dtype != np.float32 or m_dims is None or q_dims is None \
            or m_dims[2] not in (q_dims[2], new_tokens):
        return None
    nodes, probs = [*score_nodes, kt, softmax], softmax.outputs[0]
    reader = sole_reader(graph, probs, "MatMul", "Cast", "Identity", "Dropout")
    while reader is not None and reader.op != "MatMul" and passes_float_on(graph, reader):
        nodes.append(reader)
        probs = reader.outputs[0]
        reader = sole_reader(graph, probs, "MatMul", "Cast", "Identity", "Dropout")
    if reader is None or reader.op != "MatMul" or reader.inputs[0] != probs:
        return None
    k = _kv_heads(graph, kt.inputs[0], heads)
    v = _kv_heads(graph, reader.inputs[1], heads)
    if k is None or v is None or graph.tensors[k[0]].shape[-1] != q.shape[-1]:
        return None
    nodes += [reader, *k[1], *v[1]]
    if not _inner(graph, nodes, reader):
        return None
    return q.name, k[0], v[0], mask, scale, nodes, reader.outputs[0]


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
    fused = 0
    for softmax in softmaxes:
        found = _match(graph, softmax, shapes, new_tokens) if softmax.name in graph.nodes else None
        if found is None:
            continue
        q, k, v, mask, scale, nodes, out = found
        m = graph.tensors[mask]
        rows = graph.add_tensor(Tensor(graph.fresh_name(f"{mask}_rows"), (1, m.shape[2], m.shape[3]),
                                       np.dtype(np.float32), batch_axis=0)).name
        axes = graph.add_constant(f"{mask}_head_axis", np.array([1], np.int64)).name
        new = [Node(graph.fresh_name(f"{softmax.name}_mask"), "Squeeze", [mask, axes], [rows]),
               Node(graph.fresh_name(f"{softmax.name}_sdpa"), "SDPA", [q, k, v, rows], [out],
                    params={5: 1, 6: float(scale)}, ncnn=True, origin=softmax.origin or softmax.name)]
        graph.replace_nodes(nodes, new)
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"decoder_attention_fused": fused}

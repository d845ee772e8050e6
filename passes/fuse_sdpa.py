"""Fuse scaled dot-product attention over any leading axes into one ncnn SDPA layer:

    p = Softmax(MatMul(q, Transpose(k')) * scale, axis=-1)      q (..., T, D), k' laid out by the Transpose
    y = MatMul(p, v)                                             v (..., S, Dv)

where fuse_attention found no whole multi-head block (projections and head layouts it could take
into one layer), e.g. hf_mobilevit's attention over a batch of patch positions and heads (P, H, T, D).
ncnn's SDPA takes (G, T, D), (G, S, D), (G, S, Dv) blobs: the leading axes are reshaped into G, the
transpose that wrote k^T writes k (the same perm with its last two axes swapped), and the result is
reshaped back. The scale (scalar Muls/Divs of the scores, of q, of k^T) becomes SDPA's. No mask:
an Add before the Softmax leaves the nodes alone, as do a Softmax over another axis, broadcast
leading axes, run-time extents, or an intermediate read elsewhere. One walk over the Softmax nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.rewrite.patterns import read_only_inside, scale_of, scaled_matmul, sole_reader


def _static(graph: Graph, name: str) -> tuple | None:
    t = graph.tensors[name]
    return None if t.shape is None or None in t.shape or t.dtype != np.float32 else tuple(t.shape)


def _unscaled(graph: Graph, name: str) -> tuple[str, list[Node], float]:
    """(the tensor `name` is a scalar-scaled copy of, the scale nodes, their product) (timm scales q
    and k^T by sqrt(scale) each)."""
    nodes, factor = [], 1.0
    while True:
        node = graph.producer(name)
        scaled = None if node is None or node.ncnn else scale_of(graph, node)
        if scaled is None or graph.tensors[scaled[0]].shape != graph.tensors[name].shape:
            return name, nodes, factor
        nodes.append(node)
        name, factor = scaled[0], factor * scaled[1]


def _match(graph: Graph, softmax: Node):
    scores = graph.tensors[softmax.inputs[0]]
    if scores.rank is None or scores.rank < 3 or softmax.attrs.get("axis", -1) % scores.rank != scores.rank - 1:
        return None
    found = scaled_matmul(graph, softmax.inputs[0])
    if found is None:
        return None
    qk, chain, scale = found              # chain: the scale nodes and qk
    pv = sole_reader(graph, softmax.outputs[0], "MatMul")
    if pv is None or pv.inputs[0] != softmax.outputs[0] or scale == 0:
        return None
    (q, q_scales, q_factor), (kt, k_scales, k_factor) = (_unscaled(graph, n) for n in qk.inputs)
    scale *= q_factor * k_factor
    transpose = graph.producer(kt)
    if transpose is None or transpose.op != "Transpose" or transpose.ncnn:
        return None
    shapes = [_static(graph, n) for n in (q, kt, pv.inputs[1], pv.outputs[0])]
    if None in shapes:
        return None
    q_s, kt_s, v_s, out_s = shapes
    lead = q_s[:-2]
    if (len(q_s) != len(kt_s) or kt_s[:-2] != lead or v_s[:-2] != lead or kt_s[-2] != q_s[-1]
            or v_s[-2] != kt_s[-1]):
        return None
    old = [*q_scales, *k_scales, transpose, *chain, softmax, pv]
    if not read_only_inside(graph, old, pv):
        return None
    return q, transpose, pv, scale, old, shapes


def _tensor(graph: Graph, stem: str, shape: tuple) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), shape, np.dtype(np.float32))).name


def _as_groups(graph: Graph, name: str, shape: tuple, stem: str, nodes: list) -> str:
    """`name` reshaped to (G, rows, cols) (an ONNX Reshape, lowered later)."""
    target = (int(np.prod(shape[:-2])), *shape[-2:])
    out = _tensor(graph, stem, target)
    const = graph.add_constant(f"{stem}_shape", np.array(target, np.int64)).name
    nodes.append(Node(graph.fresh_name(stem), "Reshape", [name, const], [out]))
    return out


def fuse_sdpa(graph: Graph) -> dict:
    fused = 0
    for softmax in graph.onnx_nodes_of("Softmax"):
        found = _match(graph, softmax)
        if found is None:
            continue
        q, transpose, pv, scale, old, (q_s, kt_s, v_s, out_s) = found
        stem = softmax.name
        perm = list(transpose.attrs.get("perm", range(len(kt_s))[::-1]))
        k_s, k_perm = (*kt_s[:-2], kt_s[-1], kt_s[-2]), perm[:-2] + [perm[-1], perm[-2]]
        k = _tensor(graph, f"{stem}_k", k_s)
        source_batch = graph.tensors[transpose.inputs[0]].batch_axis      # where the Transpose moves it
        graph.tensors[k].batch_axis = None if source_batch is None else k_perm.index(source_batch)
        new = [Node(graph.fresh_name(f"{stem}_k"), "Transpose", [transpose.inputs[0]], [k], {"perm": k_perm})]
        blobs = [_as_groups(graph, n, s, f"{stem}_{what}", new)
                 for n, s, what in ((q, q_s, "q"), (k, k_s, "k3"), (pv.inputs[1], v_s, "v"))]
        attended = _tensor(graph, f"{stem}_attended", (int(np.prod(out_s[:-2])), *out_s[-2:]))
        new.append(Node(graph.fresh_name(f"{stem}_sdpa"), "SDPA", blobs, [attended], params={5: 0, 6: float(scale)},
                        ncnn=True, origin=softmax.origin or softmax.name))
        back = graph.add_constant(f"{stem}_back_shape", np.array(out_s, np.int64)).name
        new.append(Node(graph.fresh_name(f"{stem}_back"), "Reshape", [attended, back], [pv.outputs[0]]))
        graph.replace_nodes(old, new)
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"sdpa_fused": fused}

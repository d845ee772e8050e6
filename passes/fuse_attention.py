"""Fuse multi-head attention written out in ONNX ops into one ncnn MultiHeadAttention layer.

    q, k, v = x_q Wq + bq, x_k Wk + bk, x_v Wv + bv         (MatMul [+ Add], or one fused MatMul
                                                           whose columns are cut by Gather/Slice/Split;
                                                           rows (1, T, N), or (T, 1, N) sequence-first)
    heads   = Reshape / Transpose (any layout ops) of each to (1, H, T, D), k as (1, H, D, S)
    p       = Softmax(MatMul(qh, kt) * scale [+ mask], axis=-1)   (scale: scalar Mul/Div on the
                                                                   scores, on q, on k, or on both as
                                                                   dynamo's sqrt(scale) on each: one
                                                                   product)
    y       = Reshape/Transpose(MatMul(p, vh)) to (1, T, H*D), then MatMul Wo [+ Add bo]

ncnn computes (x_q Wq + bq) * scale, the per-head scores plus a (T, S) or (H, T, S) mask,
its softmax, and the output projection in one layer (multiheadattention.cpp). The layout ops are
checked by running them on an array of element indexes: each head must read exactly the columns
h*D..h*D+D-1 of its projection, and the output must put head h's column d at h*D+d. Run-time
sequence lengths are checked at two sets of sizes (attention_probe.py). Every intermediate tensor must be read only inside the match. Where the numbers would
differ (mask added before the scale, a scale on v, softmax over another axis, a mask that is
multiplied) the nodes are left as they are. One walk over the Softmax nodes (converter/rewrite/driver.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.rewrite.attention_probe import (NoMatch, attention_scores, match_at_any_size, need as _need,
                                               passes_float_on, symbolic_shapes)
from converter.rewrite.driver import Match, Miss, apply, rule
from converter.rewrite.patterns import read_only_inside, scale_of
from converter.shapes.symbolic import pinned_inputs

LAYOUT_OPS = {"Reshape", "Transpose", "Gather", "Slice", "Split", "Squeeze", "Unsqueeze", "Flatten"}


def _const(graph: Graph, name: str) -> np.ndarray | None:
    return graph.value(name) if name else None


def _static(graph: Graph, name: str) -> tuple[int, ...]:
    shape = graph.tensors[name].shape
    _need(shape is not None and None not in shape)
    return tuple(shape)


@dataclass
class Projection:
    out: str                # the projected tensor (1, T, N)
    x: str                  # the projected input: (1, T, K), or (T, K) for a Gemm
    weight: np.ndarray      # (K, N)
    bias: np.ndarray        # (N,)
    nodes: list[Node]


def _gemm_projection(graph: Graph, name: str) -> Projection | None:
    """`name` = Gemm(x, B [, C]) with x a (T, K) matrix, constant B and a per-column C."""
    node = graph.producer(name)
    if node is None or node.op != "Gemm" or node.ncnn or node.attrs["transA"]:
        return None
    b = _const(graph, node.inputs[1])
    c = _const(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    x = graph.tensors[node.inputs[0]]
    if b is None or b.dtype != np.float32 or x.rank != 2 or (len(node.inputs) > 2 and node.inputs[2] and c is None):
        return None
    alpha, beta = np.float32(node.attrs["alpha"]), np.float32(node.attrs["beta"])
    weight = (b.T if node.attrs["transB"] else b) * alpha
    n = weight.shape[1]
    if c is None:
        c = np.zeros(n, np.float32)
    if c.dtype != np.float32 or c.size != n or c.ndim > 2:
        return None
    return Projection(name, x.name, weight.astype(np.float32), (c.reshape(-1) * beta).astype(np.float32), [node])


def _projection(graph: Graph, name: str) -> Projection | None:
    """`name` = MatMul(x, W) [+ b] with constant W (K, N) and a bias of N values, or a Gemm."""
    node = graph.producer(name)
    if node is not None and node.op == "Gemm":
        return _gemm_projection(graph, name)
    bias = None
    if node is not None and node.op == "Add" and len(node.inputs) == 2 and not node.ncnn:
        for p, b in (node.inputs, node.inputs[::-1]):
            value = _const(graph, b)
            mm = graph.producer(p)
            if value is not None and mm is not None and mm.op == "MatMul" and not mm.ncnn:
                bias, add, node = value, node, mm
                break
        else:
            return None
    else:
        add = None
    if node is None or node.op != "MatMul" or node.ncnn:
        return None
    weight = _const(graph, node.inputs[1])
    x = graph.tensors[node.inputs[0]]
    if weight is None or weight.ndim != 2 or weight.dtype != np.float32 or x.shape is None or x.rank != 3:
        return None
    n = weight.shape[1]
    if bias is None:
        bias = np.zeros(n, np.float32)
    elif (bias.dtype != np.float32 or bias.size != n or bias.ndim > 3
          or any(d != 1 for d in bias.shape[:-1])):
        return None
    if graph.tensors[name].shape != (*x.shape[:-1], n):
        return None
    return Projection(name, x.name, weight, bias.reshape(-1), [node] + ([add] if add else []))


def _apply(graph: Graph, node: Node, arr: np.ndarray, out: str) -> np.ndarray:
    """Run layout op `node` on index array `arr` (its first input), giving its output `out`."""
    shape = _static(graph, out)
    op = node.op
    if op in ("Reshape", "Squeeze", "Unsqueeze", "Flatten"):
        _need(int(np.prod(shape)) == arr.size)
        return arr.reshape(shape)
    if op == "Transpose":
        perm = node.attrs.get("perm", list(range(arr.ndim))[::-1])
        return arr.transpose(perm)
    if op == "Gather":
        idx = _const(graph, node.inputs[1])
        _need(idx is not None)
        return np.take(arr, idx.astype(np.int64), axis=node.attrs.get("axis", 0))
    if op == "Slice":
        consts = [_const(graph, n) for n in node.inputs[1:]]
        _need(len(node.inputs) >= 3 and all(c is not None for c in consts))
        starts, ends = consts[0], consts[1]
        axes = consts[2] if len(consts) > 2 else np.arange(len(starts))
        steps = consts[3] if len(consts) > 3 else np.ones(len(starts), np.int64)
        index = [slice(None)] * arr.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[int(a)] = slice(*slice(int(s), int(e), int(st)).indices(arr.shape[int(a)]))
        result = arr[tuple(index)]
        _need(result.shape == shape)
        return result
    if op == "Split":
        axis = node.attrs.get("axis", 0) % arr.ndim
        start = sum(_static(graph, o)[axis] for o in node.outputs[:node.outputs.index(out)])
        return np.take(arr, np.arange(start, start + shape[axis]), axis=axis)
    raise NoMatch


def _trace_back(graph: Graph, name: str, allow_scale: bool) -> tuple[Projection, list, float]:
    """The projection that `name` is a re-laid-out (and, if allowed, scaled) copy of; the nodes in
    between in input-to-output order as (node, the tensor it writes on the way, is a scale)."""
    chain, scale = [], 1.0
    while True:
        proj = _projection(graph, name)
        if proj is not None:
            return proj, chain[::-1], scale
        node = graph.producer(name)
        _need(node is not None and not node.ncnn)
        scaled = scale_of(graph, node) if allow_scale else None
        if scaled is not None:
            _need(graph.tensors[name].shape == graph.tensors[scaled[0]].shape)
            chain.append((node, name, True))
            name, factor = scaled
            scale *= factor
            continue
        data = node.inputs[:len(node.inputs) - len(pinned_inputs(node))]     # not the tensors sizes name
        _need(node.op in LAYOUT_OPS and data and data.count(data[0]) == 1)
        chain.append((node, name, False))
        name = node.inputs[0]


def _heads(graph: Graph, name: str, allow_scale: bool, transposed: bool):
    """(projection, nodes, scale, column offset, H, D) for a head tensor (1, H, T, D) (or
    (1, H, D, T) when `transposed`) that reads columns offset + h*D + d of its projection."""
    proj, chain, scale = _trace_back(graph, name, allow_scale)
    p_shape = _static(graph, proj.out)
    # (T, N), (1, T, N), or torch's sequence-first (T, 1, N): rows in the same order either way
    _need(len(p_shape) == 2 or len(p_shape) == 3 and 1 in p_shape[:2])
    arr = np.arange(int(np.prod(p_shape))).reshape(p_shape)
    p_shape = (int(np.prod(p_shape[:-1])), p_shape[-1])
    for node, out, is_scale in chain:
        if not is_scale:
            arr = _apply(graph, node, arr, out)
    _need(arr.ndim == 4 and arr.shape[0] == 1)
    heads, t, d = (arr.shape[1], arr.shape[3], arr.shape[2]) if transposed else arr.shape[1:]
    offset = int(arr.flat[0])
    h_i, t_i, d_i = np.ogrid[:heads, :t, :d]
    want = t_i * p_shape[1] + offset + h_i * d + d_i
    _need(np.array_equal(arr[0], want.transpose(0, 2, 1) if transposed else want))
    _need(t == p_shape[0])
    return proj, [n for n, _, _ in chain], scale, offset, heads, d


def _output(graph: Graph, name: str, heads: int, t: int, d: int):
    """(nodes, output projection) after the attended values (1, H, T, D): layout ops that put head
    h's column d at h*D + d of a (1, T, H*D) tensor, then MatMul Wo [+ Add bo]."""
    arr = np.arange(heads * t * d).reshape(1, heads, t, d)
    nodes = []
    while True:
        readers = graph.consumers(name)
        _need(graph.use_count(name) == 1 and len(readers) == 1 and not readers[0].ncnn)
        node = readers[0]
        if node.op in ("MatMul", "Gemm") and node.inputs[0] == name:
            break
        _need(node.op in LAYOUT_OPS and node.op not in ("Split", "Gather", "Slice")
              and node.inputs[0] == name and len(node.outputs) == 1)
        arr = _apply(graph, node, arr, node.outputs[0])
        nodes.append(node)
        name = node.outputs[0]
    h_i, t_i, d_i = np.ogrid[:heads, :t, :d]
    want = np.zeros((t, heads * d), np.int64)
    want[t_i, h_i * d + d_i] = h_i * t * d + t_i * d + d_i
    _need(arr.shape[-2:] == (t, heads * d) and arr.size == want.size
          and np.array_equal(arr.reshape(want.shape), want))
    final = node.outputs[0]
    readers = graph.consumers(final)
    if graph.use_count(final) == 1 and len(readers) == 1 and readers[0].op == "Add":
        proj = _projection(graph, readers[0].outputs[0])
        if proj is not None and proj.nodes[0] is node:
            return nodes, proj
    proj = _projection(graph, final)
    _need(proj is not None)
    return nodes, proj


def _mask_input(graph: Graph, mask: str, heads: int, t: int, s: int, stem: str) -> tuple[str, list[Node]]:
    """The mask as ncnn's MultiHeadAttention reads it: (1, T, S) (one for all heads) or
    (1, H, T, S), batch axis first; ONNX nodes (lowered later) broadcast it there."""
    m = graph.tensors[mask]
    _need(m.dtype == np.float32 and m.shape is not None and None not in m.shape and m.rank <= 4)
    full = (1,) * (4 - m.rank) + tuple(m.shape)
    _need(full[0] == 1 and full[1] in (1, heads) and full[2] in (1, t) and full[3] in (1, s))
    target = (1, t, s) if full[1] == 1 else (1, heads, t, s)
    if m.is_constant:
        value = np.broadcast_to(m.value.reshape(full), (1, full[1], t, s)).reshape(target)
        const = graph.add_constant(f"{stem}_mask", np.ascontiguousarray(value, np.float32))
        const.batch_axis = 0        # ncnn reads (T, S) or (H, T, S): a leading 1 would be a 4th axis
        return const.name, []
    nodes, name = [], mask
    direct = (1, full[2], full[3]) if full[1] == 1 else full
    if m.shape != direct:
        shape = graph.add_constant(f"{stem}_mask_shape", np.array(direct, np.int64)).name
        name = _new(graph, f"{stem}_mask_aligned", direct)
        nodes.append(Node(graph.fresh_name(f"{stem}_mask_reshape"), "Reshape", [mask, shape], [name]))
    if direct != target:
        zeros = graph.add_constant(f"{stem}_mask_zeros", np.zeros(target, np.float32)).name
        full_name = _new(graph, f"{stem}_mask_full", target)
        nodes.append(Node(graph.fresh_name(f"{stem}_mask_expand"), "Add", [name, zeros], [full_name]))
        name = full_name
    return name, nodes


def _new(graph: Graph, stem: str, shape: tuple) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), tuple(shape), np.dtype(np.float32),
                                   batch_axis=0)).name


def _rows(graph: Graph, name: str) -> tuple[int, int]:
    """(rows, width) of a tensor that is a static 2-D blob in ncnn, as MultiHeadAttention reads it."""
    shape = graph.tensors[name].ncnn_shape
    _need(shape is not None and len(shape) == 2 and None not in shape)
    return shape


def _scores(graph: Graph, softmax: Node):
    try:
        return attention_scores(graph, softmax)
    except NoMatch:
        raise NoMatch("the Softmax's input is not MatMul(q, k) scaled by constants (plus a mask)") from None


def _why(reason: str, find: Callable, *args):
    """`find(*args)`, a NoMatch without a reason of its own given `reason`."""
    try:
        return find(*args)
    except NoMatch as exc:
        raise NoMatch(str(exc) or reason) from None


def _match(graph: Graph, softmax: Node, masks: dict) -> tuple[Node, list[Node], list[Node]]:
    x = graph.tensors[softmax.inputs[0]]
    axis = softmax.attrs["axis"]
    if not (x.rank == 4 and axis % 4 == 3):
        raise NoMatch(f"a Softmax over axis {axis} of a rank {x.rank} tensor, not the last of 4")
    qk, score_nodes, scale, mask = _scores(graph, softmax)
    q = _why("q is not a projection's columns laid out as heads", _heads, graph, qk.inputs[0], True, False)
    k = _why("k is not a projection's columns laid out as transposed heads", _heads, graph, qk.inputs[1], True, True)
    probs, passthrough = softmax.outputs[0], []
    while True:
        readers = graph.consumers(probs)
        _need(graph.use_count(probs) == 1 and len(readers) == 1 and not readers[0].ncnn)
        if not passes_float_on(graph, readers[0]):
            break
        passthrough.append(readers[0])
        probs = readers[0].outputs[0]
    if not (readers[0].op == "MatMul" and readers[0].inputs[0] == probs):
        raise NoMatch("the probabilities are not read by one MatMul(p, v) only")
    pv = readers[0]
    v = _why("v is not a projection's columns laid out as heads", _heads, graph, pv.inputs[1], False, False)
    (qp, qn, qs, qo, heads, d), (kp, kn, ks, ko, kh, kd), (vp, vn, _, vo, vh, vd) = q, k, v
    if not (heads == kh == vh and d == kd == vd):
        raise NoMatch(f"q, k and v have {heads}, {kh}, {vh} heads of {d}, {kd}, {vd} values: not all the same")
    embed = heads * d
    (t, qdim), (s, kdim), (s_v, vdim) = (_rows(graph, p.x) for p in (qp, kp, vp))
    _need(s_v == s)
    out_nodes, out = _why("the heads are not merged back and projected by one MatMul [+ Add]", _output, graph,
                          pv.outputs[0], heads, t, d)
    _need(out.weight.shape == (embed, qdim) and _rows(graph, out.out) == (t, qdim))
    projections = {id(n): n for p in (qp, kp, vp) for n in p.nodes}
    nodes = [*projections.values(), *qn, *kn, *vn, *score_nodes, softmax, *passthrough, pv, *out_nodes, *out.nodes]
    nodes = list({n.name: n for n in nodes}.values())
    last = out.nodes[-1]
    if not read_only_inside(graph, nodes, last):
        raise NoMatch("a tensor inside the block is read outside it")
    stem = softmax.name
    mask_name, mask_nodes = None, []
    if mask is not None:        # the layers of one model share their mask: broadcast it once
        key = (mask, heads, t, s)
        if key not in masks:
            masks[key], mask_nodes = _mask_input(graph, mask, heads, t, s, stem)
        mask_name = masks[key]

    def cols(p: Projection, offset: int) -> tuple[np.ndarray, np.ndarray]:
        return (np.ascontiguousarray(p.weight[:, offset:offset + embed].T),
                np.ascontiguousarray(p.bias[offset:offset + embed]))
    (wq, bq), (wk, bk), (wv, bv) = cols(qp, qo), cols(kp, ko), cols(vp, vo)
    blobs = [qp.x] if qp.x == kp.x == vp.x else [qp.x, kp.x] if kp.x == vp.x else [qp.x, kp.x, vp.x]
    params = {0: embed, 1: heads, 2: embed * qdim, 3: kdim, 4: vdim,
              5: int(mask is not None), 6: float(np.float32(scale * qs * ks))}
    fused = Node(graph.fresh_name(f"{stem}_attention"), "MultiHeadAttention",
                 blobs + ([mask_name] if mask_name else []), [last.outputs[0]], params=params,
                 weights=[wq, bq, wk, bk, wv, bv, np.ascontiguousarray(out.weight.T), out.bias],
                 ncnn=True, origin=softmax.origin or softmax.name)
    return fused, nodes, mask_nodes


def _match_rule(graph: Graph, softmax: Node, shapes, masks: dict) -> Match:
    try:
        node, nodes, mask_nodes = match_at_any_size(graph, shapes, softmax, _match, _scores, masks)
    except NoMatch as exc:
        raise Miss(str(exc) or "no attention block around this Softmax") from None
    return Match(nodes, node=node, mask_nodes=mask_nodes)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [*m.mask_nodes, m.node]


def fuse_attention(graph: Graph) -> dict:
    masks, shapes = {}, symbolic_shapes(graph)
    if graph.share_weights:
        return _fuse_all_but_repeated(graph, shapes, masks)
    return apply(graph, rule("fuse_attention", "attention_fused", "Softmax",
                             lambda g, softmax: _match_rule(g, softmax, shapes, masks), _build))


def _repeated(matches: list) -> set[int]:
    """Indexes of matches whose query weights another match holds too (a block the model reuses)."""
    seen: dict[bytes, list[int]] = {}
    for k, (node, _, _) in enumerate(matches):
        seen.setdefault(np.ascontiguousarray(node.weights[0]).tobytes(), []).append(k)
    return {k for group in seen.values() if len(group) > 1 for k in group}


def _fuse_all_but_repeated(graph: Graph, shapes, masks: dict) -> dict:
    """convert --share-weights: MultiHeadAttention takes no weight blob, so a reused block stays
    projections (Gemms that share_repeated_weights makes read one B) around its attention. Which
    blocks repeat is known only once every Softmax is matched: collect first, then apply."""
    fused, matches = 0, []
    for softmax in graph.onnx_nodes_of("Softmax"):
        try:
            matches.append(match_at_any_size(graph, shapes, softmax, _match, _scores, masks))
        except NoMatch:
            continue
    kept = _repeated(matches)
    for k, (node, nodes, mask_nodes) in enumerate(matches):
        for n in mask_nodes:        # a later match may read a mask this one made (eliminate_dead drops the rest)
            graph.add_node(n)
        if k in kept:
            continue
        for n in nodes:
            graph.remove_node(n)
        graph.add_node(node)
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"attention_fused": fused, "attention_kept_for_shared_weights": len(kept)}

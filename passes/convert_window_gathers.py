"""A GatherND of windows wider than ncnn, summed and scaled back down, becomes MatMuls by constant matrices.

torch's dynamo export decomposes adaptive_avg_pool1d/2d into: move the pooled axes to the front
(Transpose), gather every window's pixels at constant indices (GatherND to [oh, kh, ow, kw, N, C],
six axes), move them back, zero the padding of short windows (Where on a constant mask), sum the
window axes (Gather of one index + Add, or ReduceSum/ReduceMean) and divide by the window sizes.
Every step after the gather is linear in the gathered pixels and acts alike on the axes the gather
carries along (N, C), so each result is a constant matrix applied to the pooled axes: a tensor of the
region is held as coefficients over the source pixels, one row per position of its own axes.

Where a result is adaptive average pooling of an (N = 1, C, H, W) source (torch's and ncnn's windows
agree: floor(i H / oh) to ceil((i + 1) H / oh)), it is ncnn's Pooling with adaptive_pooling=1.
Otherwise, where its matrix is a product of one matrix per pooled axis (any windows, a batch ncnn
keeps), it is computed as at most two MatMuls by constants, on the last two axes of the source in
(N, C, H, W) order (converter/lowering/resize_products.py does the same for Resize): a weighted sum
per window, exact up to float summation order. The region's nodes are dropped.
Anything else (another op reading a region tensor halfway, a matrix that does not factor, a third
pooled axis that is not kept as is) leaves the graph unchanged, and the wide GatherND is refused as
before. One walk over the GatherNDs; each region is visited once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.op_table import OpTable
from converter.shapes.batch_axis import follow_batch_axis

AVG = 1                       # ncnn Pooling's pooling_type
MAX_MATRIX = 1 << 23          # elements (float32) of the coefficients of one region tensor


@dataclass
class Lin:
    """A region tensor: pos[i] is the carried axis it is (index into the gather's carried axes) or None
    for one of its own axes; coef has its own axes in order, then the gathered pixels' axes."""
    pos: list[int | None]
    coef: np.ndarray


def _own_shape(pos, shape) -> tuple:
    return tuple(d for p, d in zip(pos, shape) if p is None)


def _on_own_axes(graph: Graph, name: str, pos: list, shape: tuple) -> np.ndarray | None:
    """A constant broadcast to `shape`, on the region tensor's own axes only (None if it varies along a
    carried axis or would widen the tensor)."""
    value = graph.value(name)
    if value is None or value.ndim > len(shape):
        return None
    try:
        full = np.broadcast_to(value, shape)
    except ValueError:
        return None
    for axis, p in enumerate(pos):
        if p is not None:
            if not np.all(full == full.take([0], axis=axis)):
                return None
    index = tuple(slice(None) if p is None else 0 for p in pos)
    return full[index]


# how each linear op makes a region tensor from region tensors (None where it is not linear in them)
STEPS = OpTable("window-region step")


def _step(graph: Graph, node: Node, lins: dict[str, Lin]) -> Lin | None:
    """The region tensor `node` makes from region tensors, or None where it is not linear in them."""
    out = graph.tensors[node.outputs[0]]
    if out.shape is None or None in out.shape or len(node.outputs) != 1:
        return None
    step = STEPS.get(node.op)
    return None if step is None else step(graph, node, [lins.get(i) for i in node.inputs], out)


@STEPS.register("Identity")
def _identity(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    return ins[0]


@STEPS.register("Transpose")
def _transpose(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    lin = ins[0]
    perm = list(node.attrs.get("perm") or reversed(range(len(lin.pos))))
    own = [i for i, p in enumerate(lin.pos) if p is None]
    order = [own.index(p) for p in perm if lin.pos[p] is None]
    coef = lin.coef.transpose(*order, *range(len(own), lin.coef.ndim))
    return Lin([lin.pos[p] for p in perm], coef)


@STEPS.register("Add", "Sub")
def _add(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    if None in ins or ins[0].pos != ins[1].pos or ins[0].coef.shape != ins[1].coef.shape:
        return None
    return Lin(ins[0].pos, ins[0].coef + ins[1].coef if node.op == "Add" else ins[0].coef - ins[1].coef)


@STEPS.register("Mul", "Div")
def _scale(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    """A region tensor times (or over) a constant that varies along its own axes only."""
    slot = 0 if ins[0] is not None else 1
    lin, other = ins[slot], node.inputs[1 - slot]
    if lin is None or (node.op == "Div" and slot == 1) or ins[1 - slot] is not None:
        return None
    factor = _on_own_axes(graph, other, lin.pos, out.shape)
    if factor is None or graph.tensors[node.inputs[slot]].shape != out.shape:
        return None
    factor = factor.astype(np.float32)[(...,) + (None,) * (lin.coef.ndim - factor.ndim)]
    return Lin(lin.pos, lin.coef * factor if node.op == "Mul" else lin.coef / factor)


@STEPS.register("Where")
def _where(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    """A region tensor where a constant mask holds, zero elsewhere: short windows' padding dropped."""
    slot = 1 if ins[1] is not None else 2
    lin, zero = ins[slot], graph.value(node.inputs[3 - slot])
    if lin is None or ins[0] is not None or zero is None or np.any(zero != 0):
        return None
    cond = _on_own_axes(graph, node.inputs[0], lin.pos, out.shape)
    if cond is None or graph.tensors[node.inputs[slot]].shape != out.shape:
        return None
    keep = cond.astype(bool) if slot == 1 else ~cond.astype(bool)
    return Lin(lin.pos, lin.coef * keep[(...,) + (None,) * (lin.coef.ndim - keep.ndim)])


@STEPS.register("Gather")
def _gather(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    """Constant indices along one of the region tensor's own axes."""
    lin, index = ins[0], graph.value(node.inputs[1])
    if lin is None or index is None or index.ndim > 1 or lin.pos[node.attrs.get("axis", 0)] is not None:
        return None
    axis = node.attrs.get("axis", 0) % len(lin.pos)
    own = lin.pos[:axis].count(None)
    extent = lin.coef.shape[own]
    coef = np.take(lin.coef, np.where(index < 0, index + extent, index), axis=own)
    pos = lin.pos[:axis] + [None] * index.ndim + lin.pos[axis + 1:]
    return Lin(pos, coef)


@STEPS.register("ReduceSum", "ReduceMean")
def _reduce(graph: Graph, node: Node, ins: list, out: Tensor) -> Lin | None:
    """A sum or mean over some of the region tensor's own axes (the window axes)."""
    lin = ins[0]
    if lin is None:
        return None
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        axes = graph.value(node.inputs[1])
    if axes is None or len(axes) == 0:
        return None
    axes = sorted({int(a) % len(lin.pos) for a in axes})
    if any(lin.pos[a] is not None for a in axes):
        return None
    own = tuple(lin.pos[:a].count(None) for a in axes)
    keep = bool(node.attrs.get("keepdims", 1))
    coef = (np.sum if node.op == "ReduceSum" else np.mean)(lin.coef, axis=own, keepdims=keep)
    pos = lin.pos if keep else [p for a, p in enumerate(lin.pos) if a not in axes]
    return Lin(pos, coef)


def _region(graph: Graph, gather: Node, order: dict[str, int]) -> dict[str, Lin] | None:
    """Every tensor linear in the gathered windows, starting at the GatherND's output."""
    data, out = graph.tensors[gather.inputs[0]], graph.tensors[gather.outputs[0]]
    indices = graph.value(gather.inputs[1])
    if indices is None or gather.attrs.get("batch_dims", 0) or data.shape is None or None in data.shape:
        return None
    k = indices.shape[-1]
    pooled = data.shape[:k]
    if indices.size // k * int(np.prod(pooled)) > MAX_MATRIX:
        return None
    flat = np.ravel_multi_index(tuple(np.moveaxis(indices % np.array(pooled), -1, 0)), pooled)
    coef = np.eye(int(np.prod(pooled)), dtype=np.float32)[flat].reshape(*indices.shape[:-1], *pooled)
    lins = {out.name: Lin([None] * (indices.ndim - 1) + list(range(data.rank - k)), coef)}
    pending, seen = [out.name], set()
    readers: list[Node] = []
    while pending:
        for reader in graph.consumers(pending.pop()):
            if reader.name not in seen and reader.op in STEPS and not reader.ncnn:
                seen.add(reader.name)
                readers.append(reader)
                pending.extend(reader.outputs)
    for reader in sorted(readers, key=lambda n: order[n.name]):
        if all(i in lins or graph.value(i) is not None for i in reader.inputs if i):
            lin = _step(graph, reader, lins)
            if lin is not None and lin.coef.size <= MAX_MATRIX:
                lins[reader.outputs[0]] = lin
    return lins


def _factors(coef: np.ndarray, k: int) -> list[np.ndarray] | None:
    """coef (own axes o_1..o_k, pooled axes p_1..p_k) as the product of one (o_i, p_i) matrix per axis."""
    if coef.ndim != 2 * k:
        return None
    factors, rest = [], coef.transpose(*[a for i in range(k) for a in (i, k + i)])
    for i in range(k - 1):
        rows = rest.shape[0] * rest.shape[1]
        m = rest.reshape(rows, -1)
        r, c = np.unravel_index(np.argmax(np.abs(m)), m.shape)
        if m[r, c] == 0:
            return None
        u, v = m[:, c], m[r, :] / m[r, c]
        if not np.allclose(np.outer(u, v), m, rtol=1e-5, atol=1e-7 * abs(m[r, c])):
            return None
        factors.append(u.reshape(rest.shape[:2]))
        rest = v.reshape(rest.shape[2:])
    factors.append(rest)
    # a 1x1 factor (a kept axis of extent 1) carries no window: its scale moves to the last real factor
    scale = np.prod([f[0, 0] for f in factors if f.shape == (1, 1)])
    factors = [np.ones((1, 1)) if f.shape == (1, 1) else f for f in factors]
    real = [i for i, f in enumerate(factors) if f.shape != (1, 1)] or [k - 1]
    factors[real[-1]] = factors[real[-1]] * scale
    return factors


def _source(graph: Graph, gather: Node, carried: int, made: list[Node]) -> str:
    """The gather's data with its carried axes first and its pooled axes last (N, C, H, W)."""
    data = graph.tensors[gather.inputs[0]]
    k = data.rank - carried
    want = list(range(k, data.rank)) + list(range(k))
    producer = graph.producer(data.name)
    if producer is not None and producer.op == "Transpose" and not producer.ncnn:
        x = graph.tensors[producer.inputs[0]]
        perm = list(producer.attrs.get("perm") or reversed(range(x.rank)))
        want, data = [perm[a] for a in want], x
    if want == list(range(data.rank)):
        return data.name
    name = graph.fresh_name(f"{gather.outputs[0]}_source")
    step = Node(graph.fresh_name(f"{gather.name}_source"), "Transpose", [data.name], [name], {"perm": want},
                origin=gather.origin or gather.name)
    follow_batch_axis(graph, step, graph.add_tensor(Tensor(name, tuple(data.shape[a] for a in want), data.dtype)))
    made.append(step)
    return name


def _adaptive_mean(size: int, out: int) -> np.ndarray:
    """Adaptive average pooling along one axis (torch's windows, ncnn's too: pooling.cpp), as a matrix."""
    matrix = np.zeros((out, size), np.float32)
    for i in range(out):
        start, end = i * size // out, -(-(i + 1) * size // out)
        matrix[i, start:end] = 1 / (end - start)
    return matrix


def _is_adaptive_mean(coef: np.ndarray, source: Tensor) -> bool:
    """The region tensor is ncnn's adaptive average Pooling of a [W, H, C] blob (batch of one dropped)."""
    if source.rank != 4 or source.batch_axis != 0 or coef.ndim != 4:
        return False
    (oh, ow), (h, w) = coef.shape[:2], coef.shape[2:]
    want = np.einsum("ah,bw->abhw", _adaptive_mean(h, oh), _adaptive_mean(w, ow))
    return bool(np.allclose(coef, want, rtol=1e-5, atol=0))


def _materialize(graph: Graph, gather: Node, name: str, lin: Lin, carried: int, made: list[Node]) -> bool:
    """Nodes computing region tensor `name` from the source: MatMuls on its last two axes, carried axes first."""
    out = graph.tensors[name]
    k = len(lin.pos) - carried
    if lin.pos != list(range(carried)) + [None] * k:
        return False
    factors = _factors(lin.coef, k)
    if factors is None:
        return False
    moving = [i for i, f in enumerate(factors) if not (f.shape[0] == f.shape[1] and np.allclose(f, np.eye(len(f))))]
    if any(i < k - 2 for i in moving) or not moving:
        return False
    current = _source(graph, gather, carried, made)
    if _is_adaptive_mean(lin.coef, graph.tensors[current]):
        origin = gather.origin or gather.name
        pooled = name
        if out.batch_axis != 0:     # the gather lost the batch axis: the result is an ncnn 4-D [W, H, C, 1]
            pooled = graph.add_tensor(Tensor(graph.fresh_name(f"{name}_pooled"), out.shape, out.dtype,
                                             batch_axis=0)).name
            shape = graph.add_constant(f"{name}_shape", np.array(out.shape, np.int64)).name
            made.append(Node(graph.fresh_name(f"{gather.name}_unpooled"), "Reshape", [pooled, shape], [name],
                             origin=origin))
        made.insert(len(made) - (pooled != name), Node(
            graph.fresh_name(f"{gather.name}_pool"), "Pooling", [current], [pooled],
            params={0: AVG, 7: 1, 8: out.shape[3], 18: out.shape[2]}, ncnn=True, origin=origin))
        return True
    shape = list(graph.tensors[current].shape)
    for n, i in enumerate(sorted(moving, key=lambda i: factors[i].shape[0] / factors[i].shape[1])):   # shrink first
        last = n == len(moving) - 1
        axis = carried + i
        shape[axis] = factors[i].shape[0]
        result = name if last else graph.fresh_name(f"{name}_axis{axis}")
        matrix = factors[i].astype(np.float32)
        if i == k - 1:
            inputs = [current, graph.add_constant(f"{result}_window_sums", matrix.T.copy()).name]
        else:
            inputs = [graph.add_constant(f"{result}_window_sums", matrix).name, current]
        step = Node(graph.fresh_name(f"{gather.name}_axis{axis}"), "MatMul", inputs, [result], {},
                    origin=gather.origin or gather.name)
        if not last:
            follow_batch_axis(graph, step, graph.add_tensor(Tensor(result, tuple(shape), out.dtype)))
        made.append(step)
        current = result
    return tuple(shape) == tuple(out.shape)


def _convert(graph: Graph, gather: Node, order: dict[str, int]) -> bool:
    lins = _region(graph, gather, order)
    if lins is None:
        return False
    region = {graph.producer(t).name for t in lins}
    exits = [t for t in lins if t in graph.outputs
             or any(r.name not in region for r in graph.consumers(t))]
    carried = graph.tensors[gather.inputs[0]].rank - graph.value(gather.inputs[1]).shape[-1]
    made: list[Node] = []
    if not exits or gather.outputs[0] in exits or \
            not all(_materialize(graph, gather, t, lins[t], carried, made) for t in exits):
        return False
    for node in sorted((graph.nodes[n] for n in region), key=lambda n: -order[n.name]):
        graph.remove_node(node)
    for node in made:
        graph.add_node(node)
    return True


def convert_window_gathers(graph: Graph) -> dict:
    order = {n.name: i for i, n in enumerate(graph.topological())}
    converted, tried = 0, False
    for gather in [n for n in graph.topological() if n.op == "GatherND" and not n.ncnn]:
        out = graph.tensors[gather.outputs[0]]
        if out.shape is not None and len(out.ncnn_shape) > MAX_NCNN_RANK:      # only where ncnn cannot hold it
            converted += _convert(graph, gather, order)
            tried = True
    if tried:
        graph.remove_unused_tensors()      # a region given up may leave its constants behind
    return {"window_gathers_converted": converted}

"""Fit elementwise regions wider than ncnn's 4 axes by merging adjacent axes that broadcast alike.

A region is a set of computed tensors with more than 4 axes (batch axis not
counted) joined by elementwise nodes. Two adjacent axes can become one when
every tensor in the region, aligned numpy-style, has both extents equal to
the region's or both 1; the merged extent is their product, so the numbers do
not change. Merges go from the innermost pair outward until the region fits.
Tensors, constants and the region's graph inputs/outputs take the merged
shapes (inputs and outputs remember their ONNX shape for the report); a
region that cannot fit is left alone and lowering reports it.
"""
from __future__ import annotations

from converter.ir import Graph, Shape, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.op_groups import ELEMENTWISE


def _wide(t: Tensor) -> bool:
    return not t.is_constant and t.shape is not None and len(t.ncnn_shape) > MAX_NCNN_RANK


def _regions(graph: Graph) -> list[tuple[set[str], list]]:
    """Connected wide tensors (union-find over elementwise nodes), with their nodes."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for node in graph.nodes.values():
        wide = [t for t in filter(None, node.inputs + node.outputs) if _wide(graph.tensors[t])]
        for t in wide[1:]:
            parent[find(t)] = find(wide[0])
        for t in wide[:1]:
            find(t)
    groups: dict[str, set[str]] = {}
    for t in parent:
        groups.setdefault(find(t), set()).add(t)
    result = []
    for members in groups.values():
        nodes = {n.name: n for t in members for n in graph.consumers(t) + [graph.producer(t)] if n}
        result.append((members, list(nodes.values())))
    return result


def _aligned(shape: Shape, rank: int) -> tuple:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _plan(shapes: list[tuple], batch: int | None, rank: int) -> list[list[int]] | None:
    """Axis groups (outer to inner) that fit in 4 ncnn axes, or None."""
    groups = [[i] for i in range(rank)]
    ones = lambda s, g: all(s[i] == 1 for i in g)  # noqa: E731
    k = rank - 1
    while len(groups) - (batch is not None) > MAX_NCNN_RANK and k > 0:
        a, b = groups[k - 1], groups[k]
        if batch not in a + b and all(ones(s, a) == ones(s, b) for s in shapes):
            groups[k - 1:k + 1] = [a + b]
        k -= 1
    return groups if len(groups) - (batch is not None) <= MAX_NCNN_RANK else None


def _merge(shape: tuple, groups: list[list[int]]) -> tuple:
    out = []
    for g in groups:
        n = 1
        for i in g:
            n *= shape[i]
        out.append(n)
    return tuple(out)


def merge_broadcast_axes(graph: Graph) -> dict:
    merged = 0
    for members, nodes in _regions(graph):
        if any(n.ncnn or n.op not in ELEMENTWISE for n in nodes):
            continue
        operands = {t for n in nodes for t in filter(None, n.inputs + n.outputs)}
        tensors = [graph.tensors[t] for t in operands]
        if any(t.shape is None or None in t.shape for t in tensors):
            continue
        rank = max(len(t.shape) for t in tensors)
        batches = {t.batch_axis + rank - len(t.shape) for t in tensors if t.batch_axis is not None}
        if len(batches) > 1:
            continue
        batch = next(iter(batches), None)
        groups = _plan([_aligned(t.shape, rank) for t in tensors], batch, rank)
        if groups is None:
            continue
        for t in tensors:
            _apply(graph, t, groups, batch, rank)
        merged += 1
    return {"merged_regions": merged}


def _apply(graph: Graph, t: Tensor, groups: list[list[int]], batch: int | None, rank: int) -> None:
    shape = _merge(_aligned(t.shape, rank), groups)
    new_batch = next((k for k, g in enumerate(groups) if batch in g), None) if t.batch_axis is not None else None
    # drop leading groups that exist only through numpy's left padding
    pad = rank - len(t.shape)
    lead = 0
    while lead < len(groups) - 1 and all(i < pad for i in groups[lead]):
        lead += 1
    shape = shape[lead:]
    new_batch = None if new_batch is None else new_batch - lead
    if (t.name in graph.inputs or t.name in graph.outputs) and t.onnx_shape is None:
        t.onnx_shape, t.onnx_batch_axis = t.shape, t.batch_axis
    if t.is_constant:
        t.value = t.value.reshape(shape)
    t.shape, t.batch_axis = shape, new_batch

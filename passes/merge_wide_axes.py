"""Fit tensors wider than ncnn's 4 axes by merging axes that travel together through the nodes around them.

Attention and window partitioning pass through 5-D/6-D tensors on the way
(qkv split, Swin windows, patch unfolds, a mask gathered to [1,1,1,S,1]).
Two adjacent axes of a tensor can be one when no node touching it needs them
apart: a Transpose that separates them, a Gather/Split/Slice/Softmax along
one of them, a broadcast that treats them differently, the batch axis ncnn
drops. So each gap between adjacent axes ("boundary") is either cut or
merged; nodes tie boundaries of their inputs and outputs together
(union-find) or force a cut. Reshape, Flatten, Squeeze and Unsqueeze tie
nothing: any grouping of their two sides is still a reshape, rewritten over
the merged axes. Every boundary not cut is merged, the most any tensor can
be merged while every node still computes the same numbers on the merged
shapes. A tensor still left with more than 4 axes (batch axis not counted)
is refused, naming the node that keeps its axes apart.

Only tensors with more than 4 axes and the constants beside them change;
other computed tensors next to them keep their axes (every boundary cut).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from converter.ir import ConversionError, Graph, Node, Shape, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.shapes.axis_boundaries import (
    DATA_SLOTS,
    REDUCES,
    RESHAPES,
    RULES,
    Boundaries,
    _data_inputs,
    _elementwise,
    _perm,
    _slice_axes,
    _softmax_axis,
    _supported,
    reduce_axes,
)
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Op, Ref, Term, extent, op, pin_refs
from converter.shapes.wide_transposes import insert_wide_transpose_reshapes
from converter.onnx_side.cut import CutRefusal


# ---- the pass -----------------------------------------------------------------------------------------------
def merge_wide_axes(graph: Graph) -> dict:
    try:
        return _merge(graph)
    except ConversionError:
        # a last try, only where the plan cannot fit: wide Transposes hand their outputs on through
        # Reshapes, so their readers need not group the axes their way (relative-position logits)
        added = insert_wide_transpose_reshapes(graph)
        if not added:
            raise
        return {**_merge(graph), "wide_transpose_reshapes": added}


def _merge(graph: Graph) -> dict:
    """Plan (refusing when a tensor cannot fit; the graph is unchanged then) and rewrite."""
    wide = {n for n, t in graph.tensors.items()
            if not t.is_constant and t.shape is not None and len(t.ncnn_shape) > MAX_NCNN_RANK}
    if not wide:
        return {"merged_wide_tensors": 0}
    touching = {n.name for t in wide for n in graph.consumers(t) + [graph.producer(t)] if n}
    nodes = [n for n in graph.topological() if n.name in touching]
    for node in nodes:
        _own_constants(graph, node)
    targets = {n.name: _target_terms(graph, n) for n in nodes if n.op in RESHAPES}
    # first with the computed tensors that fit left as they are; if that cannot fit, they may merge too,
    # through a Reshape to their own shape where something outside reads them (two walks at most)
    b, groups = _plan(graph, nodes, wide, targets, keep_narrow=True)
    if any(_misfit(graph, b, t, g) for t, g in groups.items()):
        b, groups = _plan(graph, nodes, wide, targets, keep_narrow=False)
    for t, g in groups.items():
        why = _misfit(graph, b, t, g)
        if why:         # a host tail can compute it: the cut is before the tensor that does not fit
            raise CutRefusal(why, [t])
    groups = {t: g for t, g in groups.items() if len(g) < graph.tensors[t].rank}
    reshapes = _decouple(graph, nodes, wide, groups)
    _rewrite(graph, nodes, groups, targets)
    return {"merged_wide_tensors": sum(1 for t in groups if t in wide), "wide_reshapes_added": reshapes}


def _plan(graph: Graph, nodes: list[Node], wide: set[str], targets: dict, keep_narrow: bool
          ) -> tuple[Boundaries, dict[str, list[list[int]]]]:
    """Every boundary the nodes tie or cut; the groups of each tensor (in node order, so a refusal
    names the first tensor that cannot fit)."""
    b = Boundaries(graph)
    tensors: dict[str, None] = {}
    # a tensor beside the region only through reshapes never needs merging
    tied = {t for n in nodes if n.op not in RESHAPES for t in _data_inputs(n) + n.outputs}
    for node in nodes:
        names = [t for t in _data_inputs(node) + node.outputs if t]
        known = [t for t in names if graph.tensors[t].shape is not None]
        tensors.update(dict.fromkeys(known))
        for t in known:
            x = graph.tensors[t]
            if t not in wide and not x.is_constant and (keep_narrow or None in x.shape or t not in tied):
                b.pin(t, node)
        if not _supported(node) or len(known) < len(names) or targets.get(node.name, ()) is None:
            for t in known:
                b.pin(t, node)
            continue
        RULES.get(node.op, _elementwise)(b, graph, node)
    for t in tensors:
        if graph.tensors[t].batch_axis is not None:
            b.cut_around(t, graph.tensors[t].batch_axis, None)
    every_terms = [*(t for t in targets.values() if t), *(_terms_of(n) for n in graph.nodes.values())]
    for ref in (r for terms in every_terms for t in terms for r in _refs(t)):
        if ref.tensor in tensors and graph.tensors[ref.tensor].shape[ref.axis] is None:
            _keep_readable(b, graph.tensors[ref.tensor], ref.axis)
    return b, {t: b.groups(t) for t in tensors if graph.tensors[t].rank}


def _keep_readable(b: Boundaries, t: Tensor, axis: int) -> None:
    """A size read at run time stays readable: its axis may merge with axes of known extents (the merged
    extent divided by theirs gives it back), never with another unknown one."""
    if None in t.shape[:axis]:
        b.cut(t.name, axis - 1, None)
    if None in t.shape[axis + 1:]:
        b.cut(t.name, axis, None)


def _decouple(graph: Graph, nodes: list[Node], wide: set[str], groups: dict[str, list[list[int]]]) -> int:
    """A merged tensor that fits anyway and that something outside the region reads or writes: the
    region gets its own copy of it, joined to it by a Reshape."""
    inside = {n.name for n in nodes}
    added = 0
    for name in [t for t in groups if t not in wide and not graph.tensors[t].is_constant]:
        t, producer = graph.tensors[name], graph.producer(name)
        outside_writes = producer is None or producer.name not in inside
        outside_reads = name in graph.outputs or any(
            n.name not in inside or name not in _data_inputs(n) for n in graph.consumers(name))
        if not (outside_writes or outside_reads):
            continue
        copy = graph.add_tensor(Tensor(graph.fresh_name(f"{name}_merged"), t.shape, t.dtype, batch_axis=t.batch_axis))
        groups[copy.name] = groups.pop(name)
        for node in {n.name: n for n in graph.consumers(name) if n.name in inside}.values():
            for slot, i in enumerate(node.inputs):
                if i == name and slot < DATA_SLOTS.get(node.op, len(node.inputs)):
                    graph.replace_input(node, slot, copy.name)
        if not outside_writes:
            graph.rename_output(producer, name, copy.name)
        source, target = (name, copy) if outside_writes else (copy.name, t)
        extents = [_product(t.shape, g) for g in groups[copy.name]] if outside_writes else list(t.shape)
        shape = graph.add_constant(f"{target.name}_shape", np.array(extents, np.int64)).name
        graph.add_node(Node(graph.fresh_name(f"{name}_regroup"), "Reshape", [source, shape], [target.name],
                            origin=(producer.origin or producer.name) if producer else name))
        added += 1
    return added


def _misfit(graph: Graph, b: Boundaries, t: str, groups: list[list[int]]) -> str | None:
    tensor = graph.tensors[t]
    count = len(groups) - (tensor.batch_axis is not None)
    if count <= MAX_NCNN_RANK:
        return None
    reasons = Counter(b.why[b.find((t, k))].name for k in range(tensor.rank - 1)
                      if b.is_cut(t, k) and b.why[b.find((t, k))] is not None)
    node = graph.nodes[reasons.most_common(1)[0][0]] if reasons else graph.producer(t) or graph.consumers(t)[0]
    return (f"{node.describe()}: '{t}' would need {count} ncnn axes (shape {list(tensor.shape)}, batch axis not "
            f"counted; the nodes around it keep them apart); ncnn holds at most {MAX_NCNN_RANK}")


def _own_constants(graph: Graph, node: Node) -> None:
    """A constant beside a wide tensor may be reshaped with it: give the node its own copy."""
    for slot, name in enumerate(node.inputs[:DATA_SLOTS.get(node.op, len(node.inputs))]):
        t = graph.tensors.get(name)
        if t is not None and t.is_constant and graph.use_count(name) > 1:
            graph.replace_input(node, slot, graph.add_constant(name, t.value).name)


# ---- terms: reshape targets and run-time sizes ------------------------------------------------------------
def _refs(term: Term) -> list[Ref]:
    if isinstance(term, Ref):
        return [term]
    if isinstance(term, Op):
        return _refs(term.a) + _refs(term.b)
    return []


def _terms_of(node: Node) -> list[Term]:
    terms = list(node.meta.get(SHAPE_TERMS) or [])
    sliced = node.meta.get(SLICE_TERMS)
    return terms + ([*sliced["starts"], *sliced["ends"]] if sliced else [])


def _target_terms(graph: Graph, node: Node) -> list[Term] | None:
    """The output shape of a Reshape-like node as terms over its input's extents (-1: inferred), or None."""
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or out.shape is None:
        return None
    if SHAPE_TERMS in node.meta:
        return list(node.meta[SHAPE_TERMS])
    if None not in out.shape:
        return [1 if i == out.batch_axis else int(d) for i, d in enumerate(out.shape)]
    if node.op == "Reshape":
        codes = graph.value(node.inputs[1]) if len(node.inputs) > 1 else None
        if codes is None or node.attrs.get("allowzero", 0):
            return None
        return [extent(graph, x.name, i) if c == 0 else int(c) for i, c in enumerate(codes.reshape(-1).tolist())]
    if node.op == "Flatten":
        a = node.attrs.get("axis", 1) % (x.rank + 1) if x.rank else 0
        outer, inner = 1, 1
        for i in range(x.rank):
            outer, inner = (op("*", outer, extent(graph, x.name, i)), inner) if i < a else \
                (outer, op("*", inner, extent(graph, x.name, i)))
        return [outer, inner]
    axes = _squeeze_axes(graph, node, out.rank if node.op == "Unsqueeze" else x.rank)
    if axes is None:
        return None
    if node.op == "Squeeze":
        return [extent(graph, x.name, i) for i in range(x.rank) if i not in axes]
    kept = iter(range(x.rank))
    return [1 if i in axes else extent(graph, x.name, next(kept)) for i in range(out.rank)]


def _squeeze_axes(graph: Graph, node: Node, rank: int) -> set[int] | None:
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.value(node.inputs[1])
        axes = None if value is None else value.reshape(-1).tolist()
    return None if axes is None else {int(a) % rank for a in axes}


def _group_of(groups: list[list[int]], axis: int) -> int:
    return next(k for k, g in enumerate(groups) if axis in g)


def _remap(term: Term, graph: Graph, groups: dict[str, list[list[int]]]) -> Term:
    """A term over the old axes, over the merged ones (a read unknown axis shares its group only with known ones)."""
    if isinstance(term, Op):
        return Op(term.name, _remap(term.a, graph, groups), _remap(term.b, graph, groups))
    if isinstance(term, Ref) and term.tensor in groups:
        shape = graph.tensors[term.tensor].shape
        if shape[term.axis] is not None:
            return int(shape[term.axis])
        k = _group_of(groups[term.tensor], term.axis)
        beside = _product(shape, [i for i in groups[term.tensor][k] if i != term.axis])
        return op("//", Ref(term.tensor, k), beside)      # the others are known (_keep_readable)
    return term


# ---- rewriting ----------------------------------------------------------------------------------------------
def _rewrite(graph: Graph, nodes: list[Node], groups: dict[str, list[list[int]]],
             targets: dict[str, list[Term] | None]) -> None:
    """Nodes first (they read the old shapes), then the run-time sizes elsewhere, then the tensors."""
    reshaped = set()
    for node in nodes:
        touched = any(t in groups for t in _data_inputs(node) + node.outputs)
        if touched and node.op in RESHAPES:
            _rewrite_reshape(graph, node, groups, targets[node.name])
            reshaped.add(node.name)
        elif touched and node.op in AXIS_REWRITES:
            AXIS_REWRITES[node.op](graph, node, groups)
    for node in graph.nodes.values():
        if node.name not in reshaped:
            _remap_attrs(graph, node, groups)
    # the lowering writes the picked slices as they are for 1-D indices: indices that were not 1-D keep
    # two axes, so their Reshape to the (merged) output stays
    indices = {n.inputs[1] for n in nodes if n.op == "Gather"}
    for name, g in groups.items():
        t = graph.tensors[name]
        shape = tuple(_product(t.shape, grp) for grp in g)
        if name in indices and len(shape) == 1:
            shape = (1, *shape)
        if (name in graph.inputs or name in graph.outputs) and t.onnx_shape is None:
            t.onnx_shape, t.onnx_batch_axis = t.shape, t.batch_axis
        if t.is_constant:
            t.value = t.value.reshape(shape)
        t.shape = shape
        t.batch_axis = None if t.batch_axis is None else _group_of(g, t.batch_axis)


def _product(shape: Shape, axes: list[int]) -> int | None:
    extents = [shape[i] for i in axes]
    return None if None in extents else int(np.prod(extents, dtype=np.int64))


def _remap_attrs(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    if SHAPE_TERMS in node.meta:
        node.meta[SHAPE_TERMS] = [_remap(t, graph, groups) for t in node.meta[SHAPE_TERMS]]
    if SLICE_TERMS in node.meta:
        s = node.meta[SLICE_TERMS]
        node.meta[SLICE_TERMS] = {**s, "starts": [_remap(t, graph, groups) for t in s["starts"]],
                                   "ends": [_remap(t, graph, groups) for t in s["ends"]]}


def _rewrite_reshape(graph: Graph, node: Node, groups: dict[str, list[list[int]]], terms: list[Term]) -> None:
    """Any reshape is a Reshape over the merged axes: its target, one term per merged output axis."""
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    merged = []
    for grp in groups.get(out.name) or [[i] for i in range(out.rank)]:
        parts = [terms[i] for i in grp]
        product: Term = 1
        for p in parts:
            product = op("*", product, p)
        merged.append(-1 if -1 in [p for p in parts if isinstance(p, int)] else product)
    merged = [_remap(t, graph, groups) for t in merged]
    node.op, node.attrs, node.meta = "Reshape", {}, {}
    if all(isinstance(t, int) for t in merged):
        target = graph.add_constant(f"{out.name}_merged_shape", np.array(merged, np.int64))
        graph.set_inputs(node, [x.name, target.name])
    else:
        node.meta[SHAPE_TERMS] = merged
        graph.set_inputs(node, [x.name, ""])
        pin_refs(graph, node, merged)


def _set_axis(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    """Gather, Split, Softmax, Concat: the axis of the (first) data input, as its merged axis."""
    x = graph.tensors[node.inputs[0]]
    axis = _softmax_axis(graph, node, x) if node.op == "Softmax" else node.attrs.get("axis", 0) % x.rank
    node.attrs["axis"] = _group_of(groups.get(x.name) or [[i] for i in range(x.rank)], axis)


def _set_perm(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    perm = _perm(node, x)
    x_groups = groups.get(x.name) or [[i] for i in range(x.rank)]
    out_groups = groups.get(out.name) or [[i] for i in range(out.rank)]
    node.attrs["perm"] = [_group_of(x_groups, perm[g[0]]) for g in out_groups]


def _set_slice_axes(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    x = graph.tensors[node.inputs[0]]
    x_groups = groups.get(x.name) or [[i] for i in range(x.rank)]
    axes = [_group_of(x_groups, a) for a in _slice_axes(graph, node, x)]
    if SLICE_TERMS in node.meta:
        node.meta[SLICE_TERMS] = {**node.meta[SLICE_TERMS], "axes": axes}
    elif "starts" in node.attrs:
        node.attrs["axes"] = axes
    else:
        inputs = (node.inputs + [""] * 5)[:5]
        inputs[3] = graph.add_constant(f"{node.name}_merged_axes", np.array(axes, np.int64)).name
        graph.set_inputs(node, [i for i in inputs[:4]] + ([inputs[4]] if inputs[4] else []))


def _set_reduce_axes(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    x = graph.tensors[node.inputs[0]]
    x_groups = groups.get(x.name) or [[i] for i in range(x.rank)]
    axes = [_group_of(x_groups, a) for a in reduce_axes(graph, node, x)]
    if "axes" in node.attrs:
        node.attrs["axes"] = axes
    elif len(node.inputs) > 1 and node.inputs[1]:      # (no axes at all: every axis, merged or not)
        graph.replace_input(node, 1, graph.add_constant(f"{node.name}_merged_axes", np.array(axes, np.int64)).name)


def _set_expand_shape(graph: Graph, node: Node, groups: dict[str, list[list[int]]]) -> None:
    out = graph.tensors[node.outputs[0]]
    merged = [_product(out.shape, g) for g in groups.get(out.name) or [[i] for i in range(out.rank)]]
    graph.replace_input(node, 1, graph.add_constant(f"{node.name}_merged_shape", np.array(merged, np.int64)).name)


AXIS_REWRITES = {"Gather": _set_axis, "Split": _set_axis, "Softmax": _set_axis, "Transpose": _set_perm,
                 "Slice": _set_slice_axes, "Concat": _set_axis, **dict.fromkeys(REDUCES, _set_reduce_axes),
                 "Expand": _set_expand_shape}

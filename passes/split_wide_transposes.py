"""A Transpose that moves more than 4 axis groups becomes two that move at most 4 each, a Reshape between.

ncnn's Permute moves at most 4 axes. Runs of axes that stay together and in
order are one group (merge_wide_axes merges them), but MaxViT's grid
partition ([B,g,H/g,g,W/g,C] -> perm (0,2,4,1,3,5)) and einops' patch
unfolds move 5 groups. They can be done in two steps: the first step keeps
some pair together that the input has together, the second keeps some pair
together that the output has together, so each moves at most 4 groups. The
Reshape between them costs nothing in ONNX terms (same shape) but lets
merge_wide_axes group the middle tensor one way for each step. Only static
shapes: the middle Reshape's target is its known shape.
"""
from __future__ import annotations

import itertools

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK

MAX_GROUPS = 7      # 7! orders of the middle tensor at most: a constant bound per node


def _groups(order: list[int], batch: int | None) -> int:
    """How many groups (batch unit not counted) a permutation of units moves: a unit that follows
    its predecessor in the source shares its group, except the batch unit, which is always apart."""
    count = 0
    for i, u in enumerate(order):
        joins = i > 0 and order[i - 1] + 1 == u and batch not in (u, order[i - 1])
        count += not joins and u != batch
    return count


def _units(perm: list[int], batch: int | None) -> list[list[int]]:
    """The input's axes in runs that the permutation keeps together and in order, input order; the batch
    axis is a run of its own (ncnn drops it)."""
    runs = [[perm[0]]]
    for p in perm[1:]:
        if p == runs[-1][-1] + 1 and batch not in (p, p - 1):
            runs[-1].append(p)
        else:
            runs.append([p])
    return sorted(runs)


def _middle(target: list[int], batch: int | None) -> list[int] | None:
    """An order of the units reachable from the input order and leading to `target` in two Permutes."""
    for middle in itertools.permutations(range(len(target))):
        middle = list(middle)
        if _groups(middle, batch) > MAX_NCNN_RANK:
            continue
        position = {u: i for i, u in enumerate(middle)}
        if _groups([position[u] for u in target], None if batch is None else position[batch]) <= MAX_NCNN_RANK:
            return middle
    return None


def _split(graph: Graph, node: Node) -> bool:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or None in x.shape or out.shape is None:
        return False
    perm = [int(p) for p in node.attrs.get("perm") or reversed(range(x.rank))]
    units = _units(perm, x.batch_axis)
    unit_of = {axes[0]: k for k, axes in enumerate(units)}
    target = [unit_of[p] for p in perm if p in unit_of]
    batch = next((k for k, axes in enumerate(units) if x.batch_axis in axes), None)
    if _groups(target, batch) <= MAX_NCNN_RANK or len(units) > MAX_GROUPS:
        return False
    middle = _middle(target, batch)
    if middle is None:
        return False
    first = [a for u in middle for a in units[u]]
    shape = tuple(x.shape[a] for a in first)
    batch_axis = None if x.batch_axis is None else first.index(x.batch_axis)
    names = [graph.fresh_name(f"{out.name}_{step}") for step in ("moved", "regrouped")]
    for name in names:
        graph.add_tensor(Tensor(name, shape, x.dtype, batch_axis=batch_axis))
    target_shape = graph.add_constant(f"{names[1]}_shape", np.array(shape, np.int64)).name
    second = [first.index(p) for p in perm]
    origin = node.origin or node.name
    graph.remove_node(node)
    graph.add_node(Node(graph.fresh_name(f"{node.name}_first"), "Transpose", [x.name], [names[0]],
                        {"perm": first}, origin=origin))
    graph.add_node(Node(graph.fresh_name(f"{node.name}_between"), "Reshape", [names[0], target_shape], [names[1]],
                        origin=origin))
    graph.add_node(Node(node.name, "Transpose", [names[1]], [out.name], {"perm": second}, origin=origin))
    return True


def split_wide_transposes(graph: Graph) -> dict:
    split = 0
    for node in graph.topological():
        if node.op == "Transpose" and not node.ncnn:
            split += _split(graph, node)
    return {"transposes_split": split}

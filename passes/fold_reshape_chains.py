"""Fold a Reshape of a Reshape (or of a one-input Noop or Flatten) into one Reshape from the first one's
input. A Flatten is a Reshape to one axis (0=-1) here, as R2 and as R1.

A Reshape keeps the values in row-major order, so R2(R1(x)) is R2(x) whenever R2's target does
not depend on R1's output: R2 holds no expression (6=) and no batch-axis form (12=/13=), and its
copy codes (0, "the input's extent") are first written out as the extents R1 made (the fold is
skipped when one is unknown). R1 must be read by R2 alone and not be a graph output. Where the
folded Reshape would leave its input's shape as it is, it becomes a Noop.

Why: ncnn's x86 Reshape creates, runs and destroys a Flatten layer on each run (reshape_x86.cpp,
mat.cpp flatten()), about 0.5 us plus a copy per Reshape on this machine; lowering and the batch
merge write chains of them (a batch-merged CNN head: pooled -> per-channel view -> unmerged batch
-> flattened for the Gemm). One topological walk; a chain of k reshapes folds into its last one.
"""
from __future__ import annotations

from converter.ir import Graph, Node
from converter.ncnn_side.axes import AXIS_NAMES, COPY, INFER, SHAPE_PARAM_ID

NO_BATCH_AXIS = 233


def _moves_values_only(graph: Graph, node: Node) -> bool:
    """A one-input layer that passes its input's values on in the same order (a foldable R1)."""
    return (node.ncnn and node.op in ("Reshape", "Noop", "Flatten") and len(node.inputs) == 1 and len(node.outputs) == 1
            and node.outputs[0] not in graph.outputs and graph.use_count(node.outputs[0]) == 1)


def _self_contained(graph: Graph, node: Node) -> dict | None:
    """The Reshape's params with its copy codes written out against its input's extents, or None
    when its target depends on that input in another way (or an extent it copies is unknown)."""
    p = node.params
    if p.get(6) or p.get(12, NO_BATCH_AXIS) != NO_BATCH_AXIS or p.get(13, NO_BATCH_AXIS) != NO_BATCH_AXIS:
        return None
    shape = graph.tensors[node.inputs[0]].ncnn_shape
    params = dict(p)
    for name, pid in SHAPE_PARAM_ID.items():
        if params.get(pid) != COPY:
            continue
        names = AXIS_NAMES.get(len(shape)) if shape is not None else None
        if names is None or name not in names:
            return None            # (ncnn would copy an extent the input lacks: left alone)
        extent = shape[len(shape) - 1 - names.index(name)]
        if extent is None:
            return None
        params[pid] = int(extent)
    return params


def fold_reshape_chains(graph: Graph) -> dict:
    folded = 0
    for node in graph.topological():
        if not node.ncnn or node.op not in ("Reshape", "Flatten") or len(node.inputs) != 1:
            continue
        producer = graph.producer(node.inputs[0])
        if producer is None or not _moves_values_only(graph, producer):
            continue
        if node.op == "Flatten":
            node.op, node.params = "Reshape", {SHAPE_PARAM_ID["w"]: INFER}
        params = _self_contained(graph, node)
        if params is None:
            continue
        node.params = params
        while producer is not None and _moves_values_only(graph, producer):
            graph.replace_input(node, 0, producer.inputs[0])
            graph.remove_node(producer)
            folded += 1
            producer = graph.producer(node.inputs[0])
        x, y = graph.tensors[node.inputs[0]].ncnn_shape, graph.tensors[node.outputs[0]].ncnn_shape
        if x is not None and x == y and None not in x:
            node.op, node.params = "Noop", {}
    if folded:
        graph.remove_unused_tensors()
    return {"reshapes_folded": folded}

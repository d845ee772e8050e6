"""Transposes whose outputs are wider than ncnn hand them on through Reshapes to their own shapes
(merge_wide_axes' last try when its plan cannot fit).

Relative-position attention (BoTNet, HaloNet) broadcasts logits to [B, H, H, W, W] and moves two of
those axes, then moves others for the next step: each Transpose groups the axes it keeps in order,
but merge_wide_axes ties a Transpose's output gaps to its readers', so one reader needing an axis
apart splits every tensor up the chain until one has 5. A Reshape to the same shape (nothing in
ONNX terms) between the Transpose and its readers unties them; fold_reshape_chains drops it where
both sides end up grouped alike. Static shapes only; returns how many were inserted.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.shapes.axis_boundaries import RESHAPES


def insert_wide_transpose_reshapes(graph: Graph) -> int:
    added = 0
    for node in graph.topological():
        if node.op != "Transpose" or node.ncnn:
            continue
        out = graph.tensors[node.outputs[0]]
        readers = graph.consumers(out.name)
        if (out.shape is None or None in out.shape or len(out.ncnn_shape) <= MAX_NCNN_RANK or not readers
                or all(r.op in RESHAPES for r in readers) or out.name in graph.outputs):
            continue
        regrouped = graph.add_tensor(Tensor(graph.fresh_name(f"{out.name}_regrouped"), out.shape, out.dtype,
                                            batch_axis=out.batch_axis))
        graph.replace_all_uses(out.name, regrouped.name)
        shape = graph.add_constant(f"{regrouped.name}_shape", np.array(out.shape, np.int64)).name
        graph.add_node(Node(graph.fresh_name(f"{node.name}_regroup"), "Reshape", [out.name, shape], [regrouped.name],
                            origin=node.origin or node.name))
        added += 1
    return added

"""A MatMul by a matrix whose left operand is wider than ncnn reads it through a Reshape to its own shape.

A Linear layer applied to a window-partitioned tensor (Twins' [B, h, w, ws, ws, C]
right after the Transpose that gathers each window) contracts only the last axis:
every axis before it merges into one row axis. The Transpose before it, though,
needs those axes apart and its output's last two together, the MatMul the
opposite. A Reshape between the two (same shape, no cost in ONNX terms) unties
them, so merge_wide_axes can group the Transpose's output one way and the
MatMul's operand the other; fold_reshape_chains drops it when it ends up as
nothing. Static shapes only (the Reshape's target is the known shape).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.shapes.axis_boundaries import RESHAPES


def _needs_reshape(graph: Graph, node: Node) -> bool:
    left, right = (graph.tensors[i] for i in node.inputs[:2])
    if left.shape is None or None in left.shape or right.shape is None or len(right.shape) != 2:
        return False
    producer = graph.producer(left.name)
    return len(left.ncnn_shape) > MAX_NCNN_RANK and (producer is None or producer.op not in RESHAPES)


def insert_wide_matmul_reshapes(graph: Graph) -> dict:
    added = 0
    for node in graph.topological():
        if node.op != "MatMul" or node.ncnn or not _needs_reshape(graph, node):
            continue
        left = graph.tensors[node.inputs[0]]
        regrouped = graph.add_tensor(Tensor(graph.fresh_name(f"{left.name}_rows"), left.shape, left.dtype,
                                            batch_axis=left.batch_axis))
        shape = graph.add_constant(f"{regrouped.name}_shape", np.array(left.shape, np.int64)).name
        graph.insert_before(node, 0, Node(graph.fresh_name(f"{node.name}_rows"), "Reshape", [left.name, shape],
                                          [regrouped.name], origin=node.origin or node.name))
        added += 1
    return {"wide_matmul_reshapes": added}

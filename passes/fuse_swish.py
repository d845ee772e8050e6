"""Fuse x * Sigmoid(x) (either operand order) into one ncnn Swish layer.

The sigmoid's result must be read only by that Mul. The fused node is an
ncnn layer already, so lowering leaves it alone. One walk over the Sigmoids.
"""
from __future__ import annotations

from converter.ir import Graph, Node


def fuse_swish(graph: Graph) -> dict:
    fused = 0
    for sig in [n for n in graph.topological() if n.op == "Sigmoid" and not n.ncnn]:
        x, s = sig.inputs[0], sig.outputs[0]
        readers = graph.consumers(s)
        if graph.use_count(s) != 1 or len(readers) != 1 or graph.tensors[x].dtype.kind != "f":
            continue
        mul = readers[0]
        if mul.op != "Mul" or mul.ncnn or sorted(mul.inputs) != sorted([x, s]):
            continue
        graph.remove_node(mul)
        graph.remove_node(sig)
        graph.add_node(Node(mul.name, "Swish", [x], [mul.outputs[0]],
                            ncnn=True, origin=mul.origin or mul.name))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"swish_fused": fused}

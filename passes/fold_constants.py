"""Evaluate every ONNX node whose inputs are all constants, in one topological walk.

Shape chains (Shape/Gather/Concat/Unsqueeze/ConstantOfShape/Cast...) that
compute static sizes end up as constants this way, as do constant
subgraphs. A Shape node folds whenever the extents it reads are known, even
if its input is computed at run time. Nodes are evaluated with onnx's
reference implementation, so folding follows the spec exactly, except for the
few ops in converter/rewrite/fold.py's OWN_FOLDS where that implementation is wrong.

Folding never stops a conversion: a node it cannot evaluate (unsupported
dtype, an evaluator error) stays in the graph for its lowering, which fails
with a message naming the node if ncnn cannot run it either. Control-flow
nodes are left to passes/inline_if.py.
"""
from __future__ import annotations

from converter.ir import Graph
from converter.rewrite.fold import fold_node


def fold_constants(graph: Graph) -> dict:
    failures: dict[str, str] = {}
    folded = sum(fold_node(graph, node, failures) for node in graph.topological())
    return {"folded": folded, "fold_failures": failures}

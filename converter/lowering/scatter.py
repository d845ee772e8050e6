"""ScatterND / ScatterElements: ncnn has no scatter layer, so they only run as constants.

Masks built by scatter (Swin's shifted-window mask: zeros of the feature map's size with
window ids written in) fold in passes/fold_constants.py once every input is a constant. One
that reaches lowering reads something known only at run time: the refusal names it, and
--input-shape fixes the common case, a buffer sized by an input.
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import depends_on, fail


@lowers("ScatterND", "ScatterElements", "Scatter")
def scatter(graph: Graph, node: Node) -> list[Node]:
    runtime = next(name for name in node.inputs if name and graph.value(name) is None)
    why = (f"'{runtime}' is a graph input, known only at run time" if runtime in graph.inputs
           else depends_on(graph, runtime))
    raise fail(node, graph, f"ncnn has no scatter layer; this folds to a constant when its data, indices "
                            f"and updates are constants, but {why}")

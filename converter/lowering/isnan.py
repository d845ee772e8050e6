"""IsNaN: refused, with the forms that convert named.

ncnn has no NaN test, and no exact composition exists: its x86 min/max and comparisons are
not IEEE for NaN (NCNN_NOTES.md), and any arithmetic on a NaN stays NaN. The Softmax guard
Where(IsNaN(Softmax(z)), 0, ...) that exporters emit is rewritten before lowering
(passes/rewrite_softmax_nan_guard.py), and so is the guard over atan(y / x) of torch.export's atan2
(passes/rewrite_division_nan_guard.py); an IsNaN reaching here is anything else.
"""
from __future__ import annotations

from ..ir import Graph, Node
from . import lowers
from .common import fail


@lowers("IsNaN")
def isnan(graph: Graph, node: Node) -> list[Node]:
    raise fail(node, graph, "ncnn has no NaN test and no exact composition of one; only the guards "
                            "Where(IsNaN(p), 0, p) of a Softmax p or of atan(y / x) (atan2) convert")

"""IsNaN as data -> ncnn layers, exact: 1 - [x - x > -1] - [|x| > FLT_MAX].

ncnn's arithmetic keeps a NaN a NaN, and its x86 min/max are not IEEE for NaN (NCNN_NOTES.md), but its
Threshold layer is a plain C comparison (`x > t ? 1 : 0`, src/layer/threshold.cpp, no SIMD variant on
x86 or ARM), false for NaN. x - x is 0 for a finite x and NaN for NaN and +-inf, so [x - x > -1] is 1
exactly for finite values; [|x| > FLT_MAX] is 1 exactly for +-inf; what neither counts is NaN. Checked
in the real runtime on finite, inf and NaN values (tests/lowering/test_isnan.py).

What reads the test is another matter: Where(IsNaN(x), a, x) replaces NaNs, and the arithmetic select
ncnn computes Where with (c * a + (1 - c) * x) carries the NaN through (0 * NaN is NaN): that Where is
refused in lowering/logic.py. The Softmax and atan2 guards of that form are rewritten before lowering
(passes/rewrite_softmax_nan_guard.py, passes/rewrite_division_nan_guard.py).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS
from . import lowers
from .common import fail, layer, new_tensor

FLT_MAX = float(np.finfo(np.float32).max)


@lowers("IsNaN")
def isnan(graph: Graph, node: Node) -> list[Node]:
    x = graph.tensors[node.inputs[0]]
    if x.dtype.kind != "f":
        raise fail(node, graph, f"IsNaN of a {x.dtype} tensor")

    guard = _nan_replacing_where(graph, node)
    if guard is not None:
        raise fail(node, graph, f"Where node '{guard.name}' replaces the NaNs of '{x.name}' that this IsNaN finds; "
                                f"the test is exact in ncnn, but its select is arithmetic (c * a + (1 - c) * x), "
                                f"which carries a NaN through (0 * NaN is NaN)")

    def blob(tag: str) -> str:
        return new_tensor(graph, f"{node.outputs[0]}_{tag}", x.shape, x.batch_axis)
    zero, finite, magnitude, infinite, either = (blob(t) for t in ("zero", "finite", "abs", "inf", "counted"))
    return [layer(node, graph, "BinaryOp", [x.name, x.name], [zero], {0: BINARY_OPS["sub"]}, suffix="_sub"),
            layer(node, graph, "Threshold", [zero], [finite], {0: -1.0}, suffix="_finite"),
            layer(node, graph, "UnaryOp", [x.name], [magnitude], {0: UNARY_OPS["abs"]}, suffix="_abs"),
            layer(node, graph, "Threshold", [magnitude], [infinite], {0: FLT_MAX}, suffix="_inf"),
            layer(node, graph, "BinaryOp", [finite, infinite], [either], {0: BINARY_OPS["add"]}, suffix="_add"),
            layer(node, graph, "BinaryOp", [either], list(node.outputs), {0: BINARY_OPS["rsub"], 1: 1, 2: 1.0},
                  suffix="_nan")]


def _nan_replacing_where(graph: Graph, node: Node) -> Node | None:
    """A Where reading this IsNaN (or its Not) as condition and the tested tensor as a branch."""
    x, tests = node.inputs[0], [node.outputs[0]]
    tests += [n.outputs[0] for n in graph.consumers(node.outputs[0]) if n.op == "Not" and not n.ncnn]
    return next((w for t in tests for w in graph.consumers(t)
                 if w.op == "Where" and not w.ncnn and w.inputs[0] == t and x in w.inputs[1:]), None)

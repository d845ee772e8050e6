"""Run an ncnn Graph with numpy kernels that follow the real ncnn runtime's semantics.

`run` compiles a `Plan` (see plan.py) and runs it once; callers that run the
same graph many times keep the Plan. Blobs that have a feed take it (every
Input layer's blob must have one), every other layer runs its kernel from
`KERNELS`, and a blob is dropped right after its last consumer unless
`keep=True`. Where ncnn would compute garbage (out-of-range broadcasts,
mismatched shapes) a kernel raises instead, and the error names the layer.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from . import kernels  # noqa: F401  (registers every kernel)
from .plan import Plan
from .registry import KERNELS, InterpreterError, kernel

__all__ = ["run", "Plan", "InterpreterError", "KERNELS", "kernel"]


def run(graph: Graph, feeds: dict[str, np.ndarray], outputs: list[str] | None = None,
        keep: bool = False, fp16: bool = False) -> dict[str, np.ndarray]:
    """Compute `outputs` (default: the graph outputs, else every unconsumed blob).

    Only the layers those outputs depend on run. With keep=True every layer runs and
    every blob is returned, for per-layer comparison; fp16=True emulates ncnn's fp16 storage.
    """
    return Plan(graph, outputs, feeds, keep, fp16).run(feeds)

"""ONNX op -> ncnn layer lowerings, one short function per op, registered by op type.

A lowering takes (graph, node) for an ONNX node whose constant inputs are
already folded, and returns the ncnn nodes that replace it. The replacement
must produce the node's output tensors under the same names; new
intermediate tensors are created with `new_tensor` (shape and batch axis
known). Constant inputs that stay inputs (e.g. a BinaryOp operand) are left
as constant tensors; a later pass gives them MemoryData layers.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Callable

from converter.onnx_side.defaults import fill_defaults
from converter.op_table import OpTable

from ..ir import Graph, Node

Lowering = Callable[[Graph, Node], list[Node]]
LOWERINGS = OpTable("lowering")


def lowers(*ops: str):
    def register(fn: Lowering) -> Lowering:
        @functools.wraps(fn)       # tools (scripts/op_index.py) find the lowering itself
        def with_defaults(graph: Graph, node: Node) -> list[Node]:
            # nodes built by fusions, rewrites and other lowerings' steps (Einsum's) carry no defaults
            return fn(graph, fill_defaults(node, graph.opset))
        LOWERINGS.register(*ops)(with_defaults)
        return fn
    return register


def load_all() -> None:
    """Import every lowering module so their decorators register."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "common":
            importlib.import_module(f"{__name__}.{info.name}")

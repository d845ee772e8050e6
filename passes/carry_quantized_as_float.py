"""Tensors of quantized values computed by ops that only move, pick or compare them (QOperator
graphs run MaxPool, Reshape, Concat, Split, Resize nearest... on the int8 tensors) become float32
holding the same whole numbers, as QuantizeLinear's own output does once lowered
(converter/lowering/quantize.py). The numbers are the same: such ops never make a value that was not
an input value (or a pad of the zero point). Anything else that reads a quantized tensor keeps it int8
and its lowering refuses it, naming the node. Runs just before lowering, after the last pass that
still asks onnx's shape inference (which would insist on int8).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node

# ops whose outputs hold only values of their (first) input
VALUE_OPS = {"MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Concat",
             "Split", "Slice", "Gather", "Pad", "Tile", "Expand", "DepthToSpace", "SpaceToDepth", "Max", "Min",
             "Relu", "Clip", "ReduceMax", "ReduceMin"}
QUANTIZED = {np.dtype(np.int8), np.dtype(np.uint8)}


def _moves_values(node: Node) -> bool:
    return node.op in VALUE_OPS or (node.op == "Resize" and node.attrs.get("mode", "nearest") == "nearest")


def carry_quantized_as_float(graph: Graph) -> dict:
    carried: set[str] = set()
    for node in graph.topological():
        if node.ncnn:
            continue
        if node.op == "QuantizeLinear" or (_moves_values(node) and node.inputs and node.inputs[0] in carried):
            for out in node.outputs[:1] if node.op == "MaxPool" else node.outputs:   # MaxPool's Indices stay
                t = graph.tensors.get(out)
                if t is not None and t.dtype in QUANTIZED and not t.is_constant:
                    t.dtype = np.dtype(np.float32)
                    carried.add(out)
    return {"quantized_carried_as_float": len(carried)} if carried else {}

"""A model of N elementwise nodes that all need a broadcast fix, for scale tests and timing.

h_{i+1} = h_i (op) c_i with h of shape (1, 8, 6, 4) and c_i constants of shape
(4,) or (6, 4) (trailing-aligned in numpy, outer-aligned in ncnn), and every
fourth node adding the 2-D graph input `y` of shape (6, 4) instead.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 8, 6, 4]


def broadcast_chain(n: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    ops = ["Add", "Mul", "Sub", "Max"]
    prev = "x"
    for i in range(n):
        out = "out" if i == n - 1 else f"h{i}"
        if i % 4 == 3:
            operand = "y"
        else:
            operand = f"c{i}"
            shape = (4,) if i % 2 else (6, 4)
            inits.append(numpy_helper.from_array(rng.uniform(0.9, 1.1, shape).astype(np.float32), operand))
        nodes.append(helper.make_node(ops[i % 4], [prev, operand], [out], name=f"n{i}"))
        prev = out
    graph = helper.make_graph(
        nodes, "broadcast_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, SHAPE)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model

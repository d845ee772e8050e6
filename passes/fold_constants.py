"""Evaluate every ONNX node whose inputs are all constants, in one topological walk.

Shape chains (Shape/Gather/Concat/Unsqueeze/ConstantOfShape/Cast...) that
compute static sizes end up as constants this way, as do constant
subgraphs. A Shape node folds whenever the extents it reads are known, even
if its input is computed at run time. Nodes are evaluated with onnx's
reference implementation, so folding follows the spec exactly.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from converter.ir import ConversionError, Graph, Node

# ops whose result must not be folded even with constant inputs
NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"}


def _static_shape(graph: Graph, node: Node) -> np.ndarray | None:
    shape = graph.tensors[node.inputs[0]].shape
    if shape is None:
        return None
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", len(shape))
    part = shape[start:end]
    return None if any(d is None for d in part) else np.array(part, dtype=np.int64)


def _evaluate(graph: Graph, node: Node) -> list[np.ndarray]:
    inputs = [graph.value(i) if i else None for i in node.inputs]
    names = [f"i{k}" if i else "" for k, i in enumerate(node.inputs)]
    outs = [f"o{k}" for k in range(len(node.outputs))]
    proto = helper.make_node(node.op, names, outs, **{
        k: (onnx.numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
        for k, v in node.attrs.items()})
    model = helper.make_model(
        helper.make_graph([proto], "fold",
                          [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                           for n, v in zip(names, inputs) if n],
                          [helper.make_value_info(o, onnx.TypeProto()) for o in outs]),
        opset_imports=[helper.make_opsetid("", graph.opset)])
    feeds = {n: v for n, v in zip(names, inputs) if n}
    return ReferenceEvaluator(model).run(None, feeds)


def fold_constants(graph: Graph) -> dict:
    folded = 0
    for node in graph.topological():
        if node.ncnn or node.op in NEVER_FOLD:
            continue
        if node.op == "Shape":
            values = [_static_shape(graph, node)]
            if values[0] is None:
                continue
        elif node.op == "Constant" or all(graph.value(i) is not None for i in node.inputs if i):
            try:
                values = _evaluate(graph, node)
            except Exception as exc:
                raise ConversionError(f"{node.describe()}: constant folding failed: "
                                      f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}")
        else:
            continue
        for out, value in zip(node.outputs, values):
            if out:
                t = graph.tensors[out]
                t.value, t.shape, t.batch_axis = np.asarray(value), tuple(np.shape(value)), None
                t.dtype = t.value.dtype
        graph.remove_node(node)
        folded += 1
    return {"folded": folded}

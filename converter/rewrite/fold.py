"""One ONNX node evaluated when its inputs are constants: what fold_constants does in one walk and
other passes do to the nodes they create or expose (onnx's reference evaluator, but for the ops in
OWN_FOLDS, where it is wrong)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from converter.ir import Graph, Node
from converter.onnx_side.quantized_values import QDQ_FOLDS

# ops whose result must not be folded even with constant inputs
NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
              # a sequence is no tensor value: passes/resolve_sequences.py follows its items instead
              "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence"}
# their subgraphs read outer-scope tensors the evaluator of one node cannot see
CONTROL_FLOW = {"If", "Loop", "Scan"}


def _gather_elements(data: np.ndarray, indices: np.ndarray, axis: int = 0) -> list[np.ndarray]:
    """onnx's reference GatherElements fails on axes longer than 32 (np.choose's limit)."""
    axis %= data.ndim
    indices = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
    return [np.take_along_axis(data, indices, axis)]


# op -> fn(*input values, **attributes) -> output values, for ops the reference evaluator gets wrong
OWN_FOLDS = {"GatherElements": _gather_elements, **QDQ_FOLDS}


def _static_shape(graph: Graph, node: Node) -> np.ndarray | None:
    shape = graph.tensors[node.inputs[0]].shape
    if shape is None:
        return None
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", len(shape))
    part = shape[start:end]
    return None if any(d is None for d in part) else np.array(part, dtype=np.int64)


def _sliced_shape(graph: Graph, node: Node) -> np.ndarray | None:
    """Slice(Shape(x), starts, ends) reading only x's known extents (torch's scale 1 / sqrt(q.shape[-1])
    on a q whose sequence length is a run-time one): those extents, though other ones are not known."""
    shape = graph.producer(node.inputs[0])
    params = [graph.value(i) if i else None for i in node.inputs[1:]]
    if shape is None or shape.op != "Shape" or shape.ncnn or len(params) < 2 or any(
            p is None for p in params[:2]) or any(p is not None and p.size != 1 for p in params) \
            or len(params) > 2 and params[2] is not None and int(params[2].reshape(-1)[0]) not in (0, -1) \
            or len(params) > 3 and params[3] is not None and int(params[3].reshape(-1)[0]) != 1:
        return None
    dims = graph.tensors[shape.inputs[0]].shape
    if dims is None:
        return None
    dims = list(dims)[shape.attrs.get("start", 0):shape.attrs.get("end", len(dims))]
    start, end = (int(max(min(p.reshape(-1)[0], 2**62), -2**62)) for p in params[:2])
    part = dims[start:end]
    return None if not part or any(d is None for d in part) else np.array(part, dtype=np.int64)


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


def _values(graph: Graph, node: Node) -> list[np.ndarray] | None:
    """The node's output values when they can be computed now, else None."""
    if node.op == "Shape":
        value = _static_shape(graph, node)
        return None if value is None else [value]
    if node.op == "Slice" and graph.value(node.inputs[0]) is None:
        value = _sliced_shape(graph, node)
        return None if value is None else [value]
    if node.op != "Constant" and not all(graph.value(i) is not None for i in node.inputs if i):
        return None
    if node.op in OWN_FOLDS:
        return OWN_FOLDS[node.op](*(graph.value(i) for i in node.inputs if i), **node.attrs)
    return _evaluate(graph, node)


def fold_node(graph: Graph, node: Node, failures: dict[str, str] | None = None) -> bool:
    """Replace `node` by constant outputs if it can be evaluated now; True when it was.

    A fold that fails leaves the node for lowering; why goes into `failures` by node name.
    """
    if node.ncnn or node.op in NEVER_FOLD or node.op in CONTROL_FLOW:
        return False
    try:
        values = _values(graph, node)
    except Exception as exc:   # the evaluator's errors are many and untyped; lowering decides
        if failures is not None:
            text = str(exc).strip()
            failures[node.name] = f"{node.describe()}: {text.splitlines()[0] if text else repr(exc)}"
        return False
    if values is None:
        return False
    for out, value in zip(node.outputs, values):
        if out:
            t = graph.tensors[out]
            t.value, t.shape, t.batch_axis = np.asarray(value), tuple(np.shape(value)), None
            t.dtype = t.value.dtype
    graph.remove_node(node)
    return True

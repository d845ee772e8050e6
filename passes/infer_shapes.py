"""Infer shapes again once constants are folded, refresh batch axes, fold what that makes constant.

Shape inference at load time cannot see through shape arithmetic it does not
propagate (exporters' Shape -> Cast -> Slice -> Cast -> Concat chains feeding a
Reshape), so such outputs arrive with no shape. After fold_constants those
chains are constants, and one more run of onnx's shape inference on the
remaining ONNX nodes fills the gaps. Only unknown extents and ranks are filled
in; a known extent is never changed.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from converter.ir import Graph, Tensor
from converter.op_table import OpTable
from converter.rewrite.fold import fold_node
from converter.shapes.batch_axis import assign_batch_axes
from converter.shapes.symbolic import EXPRESSED

from .fold_constants import fold_constants


def _value_info(t: Tensor) -> onnx.ValueInfoProto:
    elem = helper.np_dtype_to_tensor_dtype(t.dtype) if t.dtype != np.dtype(object) else onnx.TensorProto.FLOAT
    # an unknown extent gets a name of its own: a shared name would tell onnx the extents are equal
    shape = None if t.shape is None else [d if d is not None else f"{t.name}:{i}" for i, d in enumerate(t.shape)]
    return helper.make_tensor_value_info(t.name, elem, shape)


def _attribute(value):
    return numpy_helper.from_array(value) if isinstance(value, np.ndarray) else value


# integer constants at most this many values enter inference with their values (shapes, axes, index
# tables); larger ones are weights (MatMulNBits' packed blocks: a 0.5B model's 300 MB were copied into
# the proto, serialized and parsed back, 1.5 GB at once) and enter as typed inputs like float weights
MAX_VALUE_NEEDED = 1 << 16


def _value_needed(t: Tensor) -> bool:
    return t.value.size <= 16 or (t.value.dtype.kind in "iub" and t.value.size <= MAX_VALUE_NEEDED)


# shapes onnx's inference does not give, by op
OWN_RULES = OpTable("shape rule")


@OWN_RULES.register("STFT")
def _stft_shape(graph: Graph, node) -> tuple | None:
    """[batch, frames, bins, 2]: onnx infers nothing when the signal length is unknown."""
    signal = graph.tensors[node.inputs[0]]
    step = graph.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    window = graph.tensors.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    length = graph.value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
    n_fft = int(length.reshape(-1)[0]) if length is not None else (
        window.shape[0] if window is not None and window.shape else None)
    if signal.shape is None or signal.rank not in (2, 3) or step is None or not n_fft:
        return None
    n = signal.shape[1]
    frames = None if n is None else (n - n_fft) // int(step.reshape(-1)[0]) + 1
    bins = n_fft // 2 + 1 if node.attrs["onesided"] else n_fft
    return (signal.shape[0], frames, bins, 2)


# ops whose output shapes we work out where onnx's inference gives none: the nodes are cut from
# the model onnx infers, their outputs entering it as inputs of the shape found here


def _apply_own_rules(graph: Graph) -> None:
    for node in graph.nodes.values():
        rule = OWN_RULES.get(node.op)
        if rule is None or node.ncnn:
            continue
        out = graph.tensors[node.outputs[0]]
        found = rule(graph, node)
        if found is not None:
            out.shape = _merge(out.shape, found)


def _cut(node) -> bool:
    """Nodes onnx cannot infer as they stand (a Reshape whose target became an expression, ops of
    OWN_RULES): their outputs enter the model as inputs of the shape we know."""
    return node.op in OWN_RULES or any(key in node.meta for key in EXPRESSED)


def _as_model(graph: Graph) -> onnx.ModelProto | None:
    nodes = [n for n in graph.topological() if not n.ncnn]
    if not nodes:
        return None
    kept = [n for n in nodes if not _cut(n)]
    cut_outputs = [o for n in nodes if _cut(n) for o in n.outputs if o]
    used = {i for n in kept for i in n.inputs if i}
    used_constants = [graph.tensors[t] for t in sorted(used) if t in graph.tensors and graph.tensors[t].is_constant]
    # inference needs the values of small integer constants (shapes, axes) and only the shapes of
    # the rest: weights enter as typed inputs, so a round costs no serialization of the model
    constants = [numpy_helper.from_array(t.value, t.name) for t in used_constants if _value_needed(t)]
    weights = [t.name for t in used_constants if not _value_needed(t)]
    protos = [helper.make_node(n.op, n.inputs, n.outputs, name=n.name,
                               **{k: _attribute(v) for k, v in n.attrs.items()}) for n in kept]
    inputs = [_value_info(graph.tensors[t]) for t in [*graph.inputs, *cut_outputs, *weights]]
    outputs = [helper.make_value_info(t, onnx.TypeProto()) for t in graph.outputs]
    model = helper.make_model(helper.make_graph(protos, graph.name, inputs, outputs, constants),
                              opset_imports=[helper.make_opsetid("", graph.opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def _merge(old: tuple | None, new: tuple) -> tuple:
    if old is None or len(old) != len(new):
        return new if old is None else old
    return tuple(o if o is not None else n for o, n in zip(old, new))


MAX_ROUNDS = 8    # each round is linear; real exports need 1-2 (a shape read from a reshaped tensor)


def infer_shapes(graph: Graph) -> dict:
    """Infer, then fold the Shape nodes that newly known extents make constant; repeat while that helps."""
    stats = {"shapes_filled": 0}
    # folding has turned Constant nodes into values: axes that only they held (opset-11 attributes
    # moved to inputs at load) now decide where the batch axis goes
    _apply_own_rules(graph)
    assign_batch_axes(graph)
    for _ in range(MAX_ROUNDS):
        filled = _infer_once(graph)
        stats["shapes_filled"] += filled
        if not filled or not fold_constants(graph)["folded"]:
            break
    else:
        stats["shapes_filled"] += _infer_node_by_node(graph)
    return stats


def _infer_node_by_node(graph: Graph) -> int:
    """What the rounds left unknown, node by node in one walk, folding as it goes: each conv of EnCodec's
    encoder pads by an amount computed from the length its predecessor's padding gave (float arithmetic
    onnx's data propagation does not follow), one round per layer otherwise."""
    filled = 0
    for node in graph.topological():
        if node.ncnn or _cut(node) or fold_node(graph, node):
            continue
        outs = [graph.tensors[o] for o in node.outputs if o]
        if all(t.shape is not None and None not in t.shape for t in outs):
            continue
        try:
            schema = onnx.defs.get_schema(node.op, graph.opset)
            proto = helper.make_node(node.op, node.inputs, node.outputs, name=node.name,
                                     **{k: _attribute(v) for k, v in node.attrs.items()})
            types = {i: _value_info(graph.tensors[i]).type for i in node.inputs if i}
            data = {i: numpy_helper.from_array(graph.value(i), i) for i in node.inputs
                    if i and graph.value(i) is not None and _value_needed(graph.tensors[i])}
            found = onnx.shape_inference.infer_node_outputs(schema, proto, types, data,
                                                            opset_imports=[helper.make_opsetid("", graph.opset)])
        except Exception:      # as in a round: what cannot be inferred stays unknown
            continue
        for t in outs:
            tt = found[t.name].tensor_type if t.name in found else None
            if tt is None or not tt.HasField("shape"):
                continue
            merged = _merge(t.shape, tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                                           for d in tt.shape.dim))
            filled += merged != t.shape
            t.shape = merged
    if filled:
        assign_batch_axes(graph)
    return filled


def _infer_once(graph: Graph) -> int:
    missing = [t for t in graph.tensors.values() if not t.is_constant and (t.shape is None or None in t.shape)]
    if not missing:
        return 0
    try:
        model = _as_model(graph)
        if model is None:
            return 0
        inferred = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:      # inference is a bonus here: what it cannot do stays unknown
        return 0
    found = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            found[vi.name] = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                                   for d in tt.shape.dim)
    filled = 0
    for t in missing:
        if t.name in found:
            merged = _merge(t.shape, found[t.name])
            filled += merged != t.shape
            t.shape = merged
    if filled:
        assign_batch_axes(graph)
    return filled

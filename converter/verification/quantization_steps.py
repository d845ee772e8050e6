"""How far a quantized model's tensors may move and still be right: one quantization step.

In a quantized model a value that lands next to a .5 step can round the other way in any two
correct implementations (ncnn's int8 layers round ties away from zero and scale by reciprocals;
onnxruntime's kernels requantize integer sums), and that one step then travels on. So verify
judges such a tensor in steps of its quantizer: the scale of the QuantizeLinear reading it or of
the DequantizeLinear writing it (the largest, for per-axis scales); the quantized (int8/uint8)
values a QuantizeLinear or a QOperator node writes move by whole steps, 1; a tensor between
quantizers takes the largest step of its inputs. A blob is right when at most FLIPPED_SHARE of its elements
are more than one step (plus the float tolerance) away: a wrong scale or weight moves nearly all.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from converter.onnx_side.qoperator_ops import EXPANSIONS

# the share of a blob's elements that may be off by more than one step: steps flipped upstream, propagated
FLIPPED_SHARE = 0.01


def _scale(node: onnx.NodeProto, constants: dict) -> float | None:
    scale = constants.get(node.input[1]) if len(node.input) > 1 else None
    return float(np.abs(scale).max()) if scale is not None and scale.size else None


def quantization_steps(proto: onnx.ModelProto) -> dict[str, float]:
    """Float tensor name -> its quantization step, for the tensors a quantizer reads or writes and
    the ones computed from them; empty for a float model."""
    g = proto.graph
    constants = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.dims in ([], [1]) or len(t.dims) == 1}
    constants.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in g.node
                      if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"})
    steps: dict[str, float] = {}
    for node in g.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.domain in ("", "ai.onnx"):
            step = _scale(node, constants)
            if step is not None:
                tensor = node.input[0] if node.op_type == "QuantizeLinear" else node.output[0]
                steps[tensor] = max(steps.get(tensor, 0.0), step)
        if node.op_type == "QuantizeLinear" or (node.op_type in EXPANSIONS and node.output[0] not in steps):
            steps[node.output[0]] = 1.0      # quantized values themselves: in whole steps
    if not steps:
        return steps
    for node in g.node:          # in graph order: a tensor between quantizers takes its inputs' largest step
        inherited = [steps[i] for i in node.input if i in steps]
        for out in node.output:
            if out not in steps and inherited and node.op_type != "QuantizeLinear":
                steps[out] = max(inherited)
    return steps


def within_steps(diff: np.ndarray, want: np.ndarray, rtol: float, atol: float, step: float) -> bool:
    """diff = |got - want| (finite where both are): right when at most FLIPPED_SHARE of the elements
    are beyond one step plus the float tolerance."""
    beyond = diff > atol + step + rtol * np.abs(want)
    return bool(np.count_nonzero(beyond) <= FLIPPED_SHARE * diff.size)

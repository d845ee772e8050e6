"""com.microsoft's QuantizeLinear / DequantizeLinear, which onnxruntime's quantizer writes below opset 21
(UseQDQContribOps, or 4-bit / 16-bit types the model's opset does not allow): the same arithmetic as
the ONNX ops. An 8-bit one becomes the ONNX op; a DequantizeLinear of a constant of another integer
type (int4 weights, int16 or int32 values) becomes its float value, computed exactly here; anything
else is refused in one line.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from converter.ir import ConversionError
from converter.onnx_side.quantized_values import dequantize_linear

MS_DOMAIN = "com.microsoft"
QDQ = ("QuantizeLinear", "DequantizeLinear")
EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


def standardize_contrib_qdq(proto: onnx.ModelProto) -> None:
    """In place: every com.microsoft Q/DQ node becomes an ONNX one or a constant, or ConversionError."""
    g = proto.graph
    if not any(n.domain == MS_DOMAIN and n.op_type in QDQ for n in g.node):
        return
    constants = {t.name: t for t in g.initializer}
    kept = []
    for node in g.node:
        if node.domain != MS_DOMAIN or node.op_type not in QDQ:
            kept.append(node)
            continue
        value = {i: numpy_helper.to_array(constants[name]) for i, name in enumerate(node.input)
                 if name in constants}
        data_type = (value[2].dtype if 2 in value else np.dtype(np.uint8)) if node.op_type == "QuantizeLinear" \
            else (value[0].dtype if 0 in value else value[2].dtype if 2 in value else np.dtype(np.uint8))
        if data_type in EIGHT_BIT:
            node.domain = ""
            kept.append(node)
        elif node.op_type == "DequantizeLinear" and 0 in value and 1 in value:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            folded = dequantize_linear(value[0], value[1], value.get(2), axis=axis)[0]
            g.initializer.append(numpy_helper.from_array(folded, node.output[0]))
        else:
            raise ConversionError(f"{node.op_type} '{node.name}' (com.microsoft) of {data_type} on a run-time "
                                  f"tensor: only 8-bit ones are supported below opset 21")
    del g.node[:]
    g.node.extend(kept)

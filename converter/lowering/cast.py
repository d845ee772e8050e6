"""ONNX Cast -> ncnn Noop / UnaryOp, where ncnn computes the same numbers.

ncnn blobs are float32 and integer or boolean ONNX tensors travel as float numbers
(converter/shapes/int_inputs.py; integers up to 2**24 are exact). So a cast between float types,
from an integer or boolean type to a float or 32/64-bit integer one, changes nothing ncnn
computes (ids fit 32 bits). Casts to float16/bfloat16 are dropped with a warning: ncnn keeps
float32, more exact than the model asked for.
A cast to an integer type truncates toward zero (UnaryOp trunc); a cast to bool is
x != 0, which is sign(|x|) for every non-NaN float. Narrowing integer casts to 8 or 16
bits (wrap-around) have no exact ncnn form.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer, unary_chain

# float types whose values float32 holds exactly (narrower ones round)
EXACT_FLOATS = {np.dtype(np.float32), np.dtype(np.float64)}


@lowers("Cast")
def cast(graph: Graph, node: Node) -> list[Node]:
    x, out = node.inputs[0], node.outputs[0]
    try:
        to = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(node.attrs["to"])))
    except (KeyError, TypeError, ValueError):
        raise fail(node, graph, f"'to' = {node.attrs.get('to')} is not an ONNX element type") from None
    source = graph.tensors[x].dtype
    if to.kind == "f" and to not in EXACT_FLOATS and source.kind == "f":     # mixed-precision exports
        graph.warnings.append(f"{node.describe()}: Cast from {source} to {to} is dropped; ncnn keeps "
                              "float32, which differs from the rounded values by at most 2**-8 relative")
    if to.kind == "b":
        if source.kind == "b":
            return [layer(node, graph, "Noop", [x], [out])]
        return unary_chain(node, graph, x, out, ["abs", "sign"])         # x != 0 as 0/1
    if to.kind == "f" or source.kind in "iub":
        if to.kind in "iu" and source.kind in "iu" and to.itemsize < min(source.itemsize, 4):
            raise fail(node, graph, f"Cast from {source} to {to} wraps around out-of-range values; ncnn "
                                    "holds integers as float numbers")
        return [layer(node, graph, "Noop", [x], [out])]
    # float -> integer: ONNX truncates toward zero
    return unary_chain(node, graph, x, out, ["trunc"])

"""A decoder step's prompt conversion: the same model with its self-attention past empty.

ncnn holds no empty Mat, so a file that takes the past cannot run a generation's first call (past
length 0). Its prompt file can: the step converted again with one self past given an extent of 0 on
its growing axis (`--input-shape past_key_values.0.key=1,2,0,16`), which empties every self past (a
prompt has no past in any layer). A past read by com.microsoft GroupQueryAttention is removed from
the node (an optional input there); any other becomes a constant with no rows, which folding takes out
of every Concat, Shape and Slice that read it. Cross-attention caches (an encoder's keys) stay inputs.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from converter.ir import ConversionError
from converter.onnx_side.genai_ops import MS_DOMAIN
from converter.shapes.decoder_layout import is_cross, past_inputs


def empty_pasts(proto: onnx.ModelProto, input_shapes: dict) -> dict:
    """In place, when `input_shapes` gives a self past a 0 extent: every self past emptied (see the
    module's note). Returns the input shapes left for the other inputs."""
    declared = {i.name: i for i in proto.graph.input}
    pasts = [n for n in past_inputs(declared) if not is_cross(n)]
    given = [n for n in pasts if n in input_shapes and 0 in input_shapes[n]]
    if not given:
        return input_shapes
    axis = list(input_shapes[given[0]]).index(0)
    for name in given:
        _check_extents(name, declared[name], input_shapes[name], axis)
    read_by_gqa = {i for n in proto.graph.node if n.domain == MS_DOMAIN and n.op_type == "GroupQueryAttention"
                   for i in list(n.input)[3:5] if i}
    for n in proto.graph.node:
        for slot, name in enumerate(n.input):
            if name in read_by_gqa:
                n.input[slot] = ""
    for name in pasts:
        tensor = declared[name].type.tensor_type
        dims = input_shapes.get(name) or _dims(declared[name])
        proto.graph.input.remove(declared[name])
        if name not in read_by_gqa:
            shape = [0 if i == axis else (d or 1) for i, d in enumerate(dims)]
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
            proto.graph.initializer.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
    return {k: v for k, v in input_shapes.items() if k not in pasts}


def _dims(value_info) -> list[int | None]:
    return [d.dim_value if d.HasField("dim_value") else None for d in value_info.type.tensor_type.shape.dim]


def _check_extents(name: str, value_info, given, axis: int) -> None:
    """An empty past's other extents are the model's (kv heads, head size): a conversion with others
    would fold the shapes the model reads from the past to numbers it never sees."""
    dims = _dims(value_info)
    if len(given) != len(dims) or any(d is not None and i != axis and d != g for i, (d, g) in enumerate(zip(dims, given))) \
            or list(given).count(0) != 1:
        shown = ",".join("?" if d is None else str(d) for d in dims)
        raise ConversionError(f"--input-shape {name}: an empty past keeps the model's other extents ({shown}) "
                              f"and gives 0 on one axis, got {','.join(map(str, given))}")

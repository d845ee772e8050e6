"""What the user fixes before shape inference: input shapes (--input-shape, pnnx's inputshape=), named
dims shared between inputs, and inputs made constants (--input-value)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from converter.ir import ConversionError

MAX_INPUT_BYTES = 2**31   # a declared input larger than this is a broken model, refused before allocating


def apply_input_shapes(proto: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> list[str]:
    """Fix the inputs' dims; returns a warning for each input whose fixed dims it overrides (a
    fully convolutional model exported at one size, e.g. CenterFace's 10x3x32x32)."""
    warnings = []
    initializers = {t.name for t in proto.graph.initializer}
    inputs = {i.name: i for i in proto.graph.input if i.name not in initializers}
    unknown = sorted(set(input_shapes) - set(inputs))
    if unknown:
        raise ConversionError(f"--input-shape names unknown input(s) {', '.join(unknown)}; "
                              f"the model's inputs are {', '.join(inputs) or 'none'}")
    named = _named_dim_values(inputs, input_shapes, warnings)
    for name, value_info in inputs.items():
        dims = value_info.type.tensor_type.shape.dim
        if name in input_shapes:
            shape = input_shapes[name]
            if len(dims) and len(shape) != len(dims):
                raise ConversionError(f"--input-shape {name}: model input has rank {len(dims)}, "
                                      f"got {len(shape)} dims")
            if any(d is not None and d <= 0 for d in shape):
                raise ConversionError(f"--input-shape {name}: dims must be positive or '?' (stays "
                                      f"dynamic), got {shape}")
            declared = [d.dim_value if d.HasField("dim_value") else None for d in dims]
            if any(d is not None and new is not None and d != new for d, new in zip(declared, shape)):
                warnings.append(f"--input-shape {name}: overrides the model's fixed dims "
                                f"{['?' if d is None else d for d in declared]} with "
                                f"{['?' if d is None else d for d in shape]}")
            old = [onnx.TensorShapeProto.Dimension.FromString(d.SerializeToString()) for d in dims]
            del value_info.type.tensor_type.shape.dim[:]
            value_info.type.tensor_type.shape.dim.extend(
                onnx.TensorShapeProto.Dimension(dim_value=d) if d is not None else
                (old[i] if i < len(old) else onnx.TensorShapeProto.Dimension(dim_param=f"{name}_{i}"))
                for i, d in enumerate(shape))
        elif len(dims) >= 2 and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = 1      # a dynamic leading (batch) dim defaults to 1
    for value_info in inputs.values():
        for dim in value_info.type.tensor_type.shape.dim:
            if dim.dim_param in named:     # a dim named like a fixed one is the same size (ONNX)
                value = named[dim.dim_param]
                dim.Clear()
                dim.dim_value = value
    return warnings


def _named_dim_values(inputs: dict, input_shapes: dict[str, list[int]], warnings: list[str]) -> dict[str, int]:
    """dim_param -> size for the named dims that --input-shape fixes (or, for an input it does not
    name, the dynamic leading batch dim that defaults to 1): inputs sharing a name share the size.
    The user's sizes win over the model's names: a name given two sizes is a warning, and fixes
    no other input's dim."""
    explicit: dict[str, tuple[str, int]] = {}
    conflicting: set[str] = set()
    defaults: dict[str, int] = {}
    for name, value_info in inputs.items():
        dims = value_info.type.tensor_type.shape.dim
        if name in input_shapes:
            for dim, new in zip(dims, input_shapes[name]):
                if not dim.dim_param or new is None:
                    continue
                seen = explicit.setdefault(dim.dim_param, (name, new))
                if seen[1] != new and dim.dim_param not in conflicting:
                    conflicting.add(dim.dim_param)
                    warnings.append(f"--input-shape: dim '{dim.dim_param}' is {seen[1]} in {seen[0]} but {new} "
                                    f"in {name}, though the model names them as one size; using the sizes given")
        elif len(dims) >= 2 and dims[0].dim_param:
            defaults[dims[0].dim_param] = 1
    fixed = {param: value for param, (_, value) in explicit.items() if param not in conflicting}
    return {param: value for param, value in {**defaults, **fixed}.items() if param not in conflicting}


def apply_input_values(proto: onnx.ModelProto, input_values: dict[str, object]) -> None:
    """Make the named graph inputs constants (e.g. a sample rate a model branches on)."""
    inputs = {i.name: i for i in proto.graph.input}
    unknown = sorted(set(input_values) - set(inputs))
    if unknown:
        raise ConversionError(f"--input-value names unknown input(s) {', '.join(unknown)}; "
                              f"the model's inputs are {', '.join(inputs) or 'none'}")
    for name, value in input_values.items():
        tt = inputs[name].type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        array = np.asarray(value, dtype=onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        if None not in dims and array.size == int(np.prod(dims, dtype=np.int64)):
            array = array.reshape(dims)
        elif array.ndim != len(dims) or any(d not in (None, s) for d, s in zip(dims, array.shape)):
            raise ConversionError(f"--input-value {name}: {array.size} value(s) do not fit the input's "
                                  f"shape {['?' if d is None else d for d in dims]}")
        proto.graph.input.remove(inputs[name])
        proto.graph.initializer.append(numpy_helper.from_array(array, name))

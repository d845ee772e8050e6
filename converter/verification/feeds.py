"""What verify feeds: the user's arrays or seeded random ones (ids inside the tables they index), in the
ONNX and the ncnn layouts, and onnxruntime's values of every tensor for them."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from converter.ir import ConversionError, Graph, Tensor
from converter.ncnn_side.layout import to_onnx
from converter.shapes.example_sizes import example_shapes
from converter.shapes.index_limits import index_limits, random_high
from converter.verification.image_input import ImageSpec


def make_inputs(proto: onnx.ModelProto, graph: Graph, given: dict[str, np.ndarray], seed: int,
                io: dict | None = None, shapes: dict[str, list[int]] | None = None) -> dict:
    """User-given arrays (in ncnn layout when `io`, the conversion's record, is given), else
    seeded random ones of each input's dtype, a sensible range and its shape in `shapes`
    (default: example_shapes)."""
    rng = np.random.default_rng(seed)
    shapes = shapes if shapes is not None else example_shapes(proto, graph)[0]
    feeds = {}
    known = {i.name for i in proto.graph.initializer}
    limits = index_limits(proto)         # ids stay inside every table they index
    unknown = sorted(set(given) - set(graph.inputs))
    if unknown:
        raise ConversionError(f"--input names unknown input(s) {', '.join(unknown)}; "
                              f"the model's inputs are {', '.join(graph.inputs)}")
    for vi in proto.graph.input:
        if vi.name in known:
            continue
        t = graph.tensors[vi.name]
        onnx_shape = t.onnx_shape or t.shape     # (an input whose axes were merged to fit ncnn)
        if vi.name in given:
            image = isinstance(given[vi.name], ImageSpec)       # decoded to the input's layout and size
            array = given[vi.name].to_array(vi.name, onnx_shape and list(onnx_shape)) if image else np.asarray(given[vi.name])
            if io is not None and not image:
                entry = next(e for e in io["inputs"] if e["onnx"] == vi.name)
                array = to_onnx(array, entry)
            if onnx_shape is not None and (len(array.shape) != len(onnx_shape) or any(
                    d is not None and d != a for d, a in zip(onnx_shape, array.shape))):
                in_ncnn = io is None and t.ncnn_shape is not None and len(t.ncnn_shape) == array.ndim and all(
                    d is None or d == a for d, a in zip(t.ncnn_shape, array.shape))
                hint = "; it has the ncnn shape: pass --layout ncnn to feed ncnn's layout" if in_ncnn else ""
                raise ConversionError(f"--input {vi.name}: array shape {list(array.shape)} does not "
                                      f"fit the input shape {list(onnx_shape)}{hint}")
            feeds[vi.name] = array.astype(t.dtype)
            continue
        shape = shapes[vi.name]
        if t.dtype.kind == "f":
            feeds[vi.name] = rng.uniform(-1.0, 1.0, shape).astype(t.dtype)
        elif t.dtype.kind in "iu":
            feeds[vi.name] = rng.integers(0, random_high(limits, vi.name), shape).astype(t.dtype)
        else:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(t.dtype)
    return feeds


def onnxruntime_all(proto: onnx.ModelProto, feeds: dict, quantized: bool = False) -> dict[str, np.ndarray]:
    """Every float tensor onnxruntime computes: outputs and intermediates (`quantized`: int8 and
    uint8 ones too, which ncnn holds as float32 whole numbers)."""
    exposed = onnx.ModelProto.FromString(proto.SerializeToString())
    have = {o.name for o in exposed.graph.output}
    kinds = {onnx.TensorProto.FLOAT, *((onnx.TensorProto.INT8, onnx.TensorProto.UINT8) if quantized else ())}
    for vi in exposed.graph.value_info:
        if vi.name not in have and vi.type.tensor_type.elem_type in kinds:
            exposed.graph.output.append(vi)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4          # its failures reach the user as our one line, not its log
    try:
        session = ort.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))
    except Exception as exc:       # the reference cannot run the model: bad input, in onnxruntime's words
        reason = " ".join(str(exc).split())
        raise ConversionError(f"onnxruntime cannot run the model: {reason[:400]}") from None


def to_ncnn_layout(array: np.ndarray, t: Tensor) -> np.ndarray:
    if t.onnx_perm is not None and array.ndim == len(t.onnx_perm):     # an NHWC input taken channels-first
        array = np.transpose(array, t.onnx_perm)
        return np.squeeze(array, t.batch_axis) if t.batch_axis is not None and array.shape[t.batch_axis] == 1 else array
    batch = t.batch_axis if t.onnx_shape is None else t.onnx_batch_axis
    if batch is not None and array.ndim > batch and array.shape[batch] == 1:
        array = np.squeeze(array, batch)
    if t.onnx_shape is not None and None not in t.ncnn_shape:     # axes merged to fit ncnn
        array = array.reshape(t.ncnn_shape)
    return array


def ncnn_feed(array: np.ndarray, t: Tensor, dtype: str = "float32") -> np.ndarray:
    """An input as ncnn takes it: batch axis dropped, a scalar as [1], float32 numbers (or
    int32 for an Embed's word indices: converter/shapes/int_inputs.py)."""
    return np.atleast_1d(to_ncnn_layout(array, t)).astype(dtype)

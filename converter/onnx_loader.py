"""ONNX model -> Graph: checker, opset upgrade, user input shapes, shape inference, batch axes."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper, shape_inference, version_converter

from .batch_axis import assign_batch_axes
from .ir import ConversionError, Graph, Node, Tensor

MIN_OPSET = 13      # older models are upgraded to this with onnx's version converter


def read_model(model: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, Path | None]:
    """The ModelProto with its external data, read only from inside the model's folder."""
    if isinstance(model, onnx.ModelProto):
        return model, None
    path = Path(model)
    if not path.is_file():
        raise ConversionError(f"cannot read model: {path} does not exist or is not a file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise ConversionError(f"cannot read model {path}: not a valid ONNX file ({_first_line(exc)})")
    folder = path.resolve().parent
    for tensor in external_data_helper._get_all_tensors(proto):
        if not external_data_helper.uses_external_data(tensor):
            continue
        location = dict((e.key, e.value) for e in tensor.external_data).get("location", "")
        target = (folder / location).resolve()
        if folder not in target.parents or not target.is_file():
            raise ConversionError(
                f"cannot read model {path}: external data '{location}' of tensor '{tensor.name}' "
                f"must be a file inside {folder}")
    try:
        external_data_helper.load_external_data_for_model(proto, str(folder))
    except Exception as exc:
        raise ConversionError(f"cannot read external data of {path}: {_first_line(exc)}")
    return proto, path


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def default_opset(proto: onnx.ModelProto) -> int:
    return next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)


def _upgrade_opset(proto: onnx.ModelProto) -> onnx.ModelProto:
    if default_opset(proto) >= MIN_OPSET:
        return proto
    from .legacy_broadcast import rewrite_legacy_broadcast
    proto = rewrite_legacy_broadcast(proto)
    try:
        upgraded = version_converter.convert_version(proto, MIN_OPSET)
    except Exception as exc:
        raise ConversionError(f"cannot upgrade opset {default_opset(proto)} model to opset "
                              f"{MIN_OPSET}: {_first_line(exc)}")
    if default_opset(proto) < 11:      # Upsample / Resize-10 meant asymmetric coordinates
        from .legacy_resize import restore_legacy_resize
        return restore_legacy_resize(proto, upgraded)
    return upgraded


def _apply_input_shapes(proto: onnx.ModelProto, input_shapes: dict[str, list[int]]) -> None:
    initializers = {t.name for t in proto.graph.initializer}
    inputs = {i.name: i for i in proto.graph.input if i.name not in initializers}
    unknown = sorted(set(input_shapes) - set(inputs))
    if unknown:
        raise ConversionError(f"--input-shape names unknown input(s) {', '.join(unknown)}; "
                              f"the model's inputs are {', '.join(inputs) or 'none'}")
    for name, value_info in inputs.items():
        dims = value_info.type.tensor_type.shape.dim
        if name in input_shapes:
            shape = input_shapes[name]
            if len(dims) and len(shape) != len(dims):
                raise ConversionError(f"--input-shape {name}: model input has rank {len(dims)}, "
                                      f"got {len(shape)} dims")
            if any(d <= 0 for d in shape):
                raise ConversionError(f"--input-shape {name}: dims must be positive, got {shape}")
            for dim, new in zip(dims, shape):
                if dim.HasField("dim_value") and dim.dim_value != new:
                    raise ConversionError(f"--input-shape {name}: dim {dim.dim_value} is fixed by the "
                                          f"model, got {new}")
            del value_info.type.tensor_type.shape.dim[:]
            value_info.type.tensor_type.shape.dim.extend(
                onnx.TensorShapeProto.Dimension(dim_value=d) for d in shape)
        elif len(dims) >= 2 and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = 1      # a dynamic leading (batch) dim defaults to 1


def _shape_of(type_proto: onnx.TypeProto) -> tuple | None:
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)


def _dtype_of(type_proto: onnx.TypeProto) -> np.dtype:
    elem = type_proto.tensor_type.elem_type
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)) if elem else np.dtype(np.float32)


def prepare_model(model, input_shapes: dict[str, list[int]] | None = None) -> onnx.ModelProto:
    """Read, check, upgrade old opsets, fix input shapes, infer shapes; the caller's proto is not changed."""
    proto, path = read_model(model)
    where = path or "model"
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:
        raise ConversionError(f"{where} is not a valid ONNX model: {_first_line(exc)}")
    proto = onnx.ModelProto.FromString(_upgrade_opset(proto).SerializeToString())
    _apply_input_shapes(proto, input_shapes or {})
    try:
        return shape_inference.infer_shapes(proto, check_type=True, data_prop=True)
    except Exception as exc:
        raise ConversionError(f"shape inference failed on {where}: {_first_line(exc)}")


def load_onnx(model, input_shapes: dict[str, list[int]] | None = None) -> Graph:
    graph = build_graph(prepare_model(model, input_shapes))
    assign_batch_axes(graph)
    return graph


def build_graph(proto: onnx.ModelProto) -> Graph:
    g = proto.graph
    graph = Graph(g.name or "graph")
    graph.opset = default_opset(proto)
    unsupported_domains = {n.domain for n in g.node if n.domain not in ("", "ai.onnx")}
    if unsupported_domains:
        ops = sorted({f"{n.domain}.{n.op_type}" for n in g.node if n.domain in unsupported_domains})
        raise ConversionError(f"unsupported custom-domain ops: {', '.join(ops)}")
    for vi in [*g.input, *g.value_info, *g.output]:
        graph.add_tensor(Tensor(vi.name, _shape_of(vi.type), _dtype_of(vi.type)))
    for init in g.initializer:
        value = numpy_helper.to_array(init)
        graph.add_tensor(Tensor(init.name, tuple(value.shape), value.dtype, value))
    initializers = {t.name for t in g.initializer}
    graph.inputs = [i.name for i in g.input if i.name not in initializers]
    graph.outputs = [o.name for o in g.output]
    for index, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{index}"
        while name in graph.nodes:
            name = f"{name}_{index}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        for key, value in attrs.items():
            if isinstance(value, onnx.TensorProto):
                attrs[key] = numpy_helper.to_array(value)
            elif isinstance(value, bytes):
                attrs[key] = value.decode()
        for out in n.output:
            if out and out not in graph.tensors:
                graph.add_tensor(Tensor(out, None))
        graph.add_node(Node(name, n.op_type, list(n.input), [o for o in n.output], attrs))
    for name in graph.inputs:
        if graph.tensors[name].shape is None:
            raise ConversionError(f"input '{name}' has no shape; give one with --input-shape {name}=DIMS")
    return graph

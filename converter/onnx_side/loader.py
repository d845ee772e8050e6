"""ONNX model -> Graph: checker, opset upgrade, user input shapes, shape inference, batch axes."""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper, version_converter

from converter.ir import ConversionError, Graph, Node, Tensor
from converter.onnx_side.contrib_qdq import standardize_contrib_qdq
from converter.onnx_side.defaults import fill_defaults
from converter.onnx_side.empty_past import empty_pasts
from converter.onnx_side.external_weights import (
    LARGE,
    external_bytes,
    external_folder,
    is_lazy,
    keep_external,
    read_external,
)
from converter.onnx_side.genai_ops import (
    detach_sequence_lengths,
    infer_with_genai_ops,
    is_genai_op,
    known_op_complaint,
)
from converter.onnx_side.isolated_inference import infer_shapes_isolated
from converter.onnx_side.legacy_broadcast import rewrite_legacy_broadcast
from converter.onnx_side.legacy_resize import restore_legacy_resize
from converter.onnx_side.qoperator_shapes import infer_with_qoperators, is_qoperator
from converter.onnx_side.user_inputs import MAX_INPUT_BYTES, apply_input_shapes, apply_input_values
from converter.onnx_side.weight_dims import fix_input_dims_from_weights
from converter.onnx_side.wire import truncated_at

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
        cut = truncated_at(path.read_bytes())
        if cut is not None:
            raise ConversionError(f"cannot read model {path}: the file is truncated ({path.stat().st_size} "
                                  f"bytes; the model field at byte {cut} runs past the end): copy or "
                                  f"download it again") from None
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
    if external_bytes(proto) >= LARGE:          # weights read into the Graph only (external_weights.py)
        keep_external(proto, folder)
        return proto, path
    try:
        external_data_helper.load_external_data_for_model(proto, str(folder))
    except Exception as exc:
        raise ConversionError(f"cannot read external data of {path}: {_first_line(exc)}")
    return proto, path


def _first_line(exc: BaseException) -> str:
    """The message's first paragraph on one line: onnx's checker wraps a sentence over lines
    ("input 'x' of node:\nname: n OpType: Add\n is not output of ...") before its context block."""
    paragraph = str(exc).strip().split("\n\n")[0]
    return " ".join(paragraph.split()) or type(exc).__name__


def default_opset(proto: onnx.ModelProto) -> int:
    return next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)


def _upgrade_opset(proto: onnx.ModelProto) -> onnx.ModelProto:
    if default_opset(proto) >= MIN_OPSET:
        return proto
    proto = rewrite_legacy_broadcast(proto)
    try:
        upgraded = version_converter.convert_version(proto, MIN_OPSET)
    except Exception as exc:
        raise ConversionError(f"cannot upgrade opset {default_opset(proto)} model to opset "
                              f"{MIN_OPSET}: {_first_line(exc)}")
    if default_opset(proto) < 11:      # Upsample / Resize-10 meant asymmetric coordinates
        return restore_legacy_resize(proto, upgraded)
    return upgraded


def _shape_of(type_proto: onnx.TypeProto) -> tuple | None:
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)


def _dtype_of(type_proto: onnx.TypeProto, name: str = "") -> np.dtype:
    elem = type_proto.tensor_type.elem_type
    if not elem:
        return np.dtype(np.float32)
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError, ValueError):
        raise ConversionError(f"tensor '{name}' has an unknown element type {elem}") from None


def _loads_in_onnxruntime(proto: onnx.ModelProto, path: Path | None = None) -> bool:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:       # weights left in their files (external_weights.py): onnxruntime reads the model's own path
        source = str(path) if path is not None and is_lazy(proto) else proto.SerializeToString()
        ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def _check(proto: onnx.ModelProto, where) -> list[str]:
    """onnx's checker; a complaint onnxruntime tolerates is a warning, not an error."""
    try:        # weights left in their files: checked by path, where the data's locations resolve
        onnx.checker.check_model(str(where) if is_lazy(proto) and isinstance(where, Path) else proto)
    except Exception as exc:
        if is_lazy(proto) and known_op_complaint(str(exc)):    # a large model: not loaded twice for this
            return [f"{where}: onnx's checker complains: {_first_line(exc)}"]
        if not _loads_in_onnxruntime(proto, where if isinstance(where, Path) else None):
            raise ConversionError(f"{where} is not a valid ONNX model: {_first_line(exc)}")
        return [f"{where}: onnx's checker complains, onnxruntime loads it: {_first_line(exc)}"]
    return []


# dim_params that name no size: Paddle calls every unknown dim "?", onnx's inference "unk__N"
ANONYMOUS_DIM = re.compile(r"\?|unk__\d+|-?\d+|\s*")


def is_anonymous(dim_param: str) -> bool:
    """A dim_param that only says "unknown": two dims so named are not one size."""
    return ANONYMOUS_DIM.fullmatch(dim_param) is not None


def _forget_declared_shapes(proto: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Exporters declare dims of -1 or 0 for dynamic ones, outputs without shapes, and sometimes
    wrong output shapes. Inputs keep their dims (-1/0 become unknown); intermediate and output
    shapes are inferred anew. Returns the declared output types, a fallback where inference
    finds nothing."""
    for vi in proto.graph.input:
        for dim in vi.type.tensor_type.shape.dim:
            if (dim.HasField("dim_value") and dim.dim_value <= 0) or (
                    dim.HasField("dim_param") and is_anonymous(dim.dim_param)):
                dim.Clear()
    declared = {}
    for vi in proto.graph.output:
        declared[vi.name] = onnx.TypeProto.FromString(vi.type.SerializeToString())
        if vi.type.tensor_type.HasField("shape"):
            vi.type.tensor_type.ClearField("shape")
    del proto.graph.value_info[:]
    return declared


# attribute defaults that onnx's shape inference misreads (onnx 1.23: an STFT without `onesided`
# is inferred with n_fft bins, while the spec and onnxruntime give n_fft // 2 + 1)
SPELLED_OUT_DEFAULTS = {"STFT": {"onesided": 1}}


def _spell_out_defaults(proto: onnx.ModelProto) -> None:
    for node in proto.graph.node:
        present = {a.name for a in node.attribute}
        for name, value in SPELLED_OUT_DEFAULTS.get(node.op_type, {}).items():
            if name not in present:
                node.attribute.append(onnx.helper.make_attribute(name, value))


def _restore_declared(proto: onnx.ModelProto, declared: dict[str, onnx.TypeProto]) -> None:
    for vi in proto.graph.output:
        old = declared.get(vi.name)
        if old is None:
            continue
        if not vi.type.tensor_type.elem_type and old.tensor_type.elem_type:
            vi.type.tensor_type.elem_type = old.tensor_type.elem_type
        if not vi.type.tensor_type.HasField("shape") and old.tensor_type.HasField("shape"):
            vi.type.tensor_type.shape.CopyFrom(old.tensor_type.shape)
            for dim in vi.type.tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value <= 0:
                    dim.Clear()


def prepare_model(model, input_shapes: dict[str, list[int]] | None = None,
                  warnings: list[str] | None = None,
                  input_values: dict[str, object] | None = None, detach: bool = True) -> onnx.ModelProto:
    """Read, check, upgrade old opsets, fix input shapes and values, infer shapes; the caller's proto
    is not changed. `detach=False` keeps GroupQueryAttention's sequence-length inputs (genai_ops),
    which onnxruntime needs to run the model.

    Checker complaints that onnxruntime tolerates are appended to `warnings`."""
    proto, path = read_model(model)
    where = path or "model"
    found = _check(proto, where)
    if warnings is not None:
        warnings.extend(found)
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    declared = _forget_declared_shapes(proto)
    proto = onnx.ModelProto.FromString(_upgrade_opset(proto).SerializeToString())
    _forget_declared_shapes(proto)       # the opset upgrade infers shapes of its own, from the old input dims
    standardize_contrib_qdq(proto)
    if detach:
        detach_sequence_lengths(proto)
    apply_input_values(proto, input_values or {})
    _spell_out_defaults(proto)
    overridden = apply_input_shapes(proto, empty_pasts(proto, input_shapes or {}))
    fix_input_dims_from_weights(proto, set(input_shapes or {}))      # a MatMul's K x N weight fixes K
    if warnings is not None:
        warnings.extend(overridden)
    try:
        proto = infer_with_qoperators(proto, lambda p: infer_with_genai_ops(p, infer_shapes_isolated(warnings)))
    except ConversionError:
        raise
    except Exception as exc:
        raise ConversionError(f"shape inference failed on {where}: {_first_line(exc)}")
    _restore_declared(proto, declared)
    return proto


def load_onnx(model, input_shapes: dict[str, list[int]] | None = None,
              input_values: dict[str, object] | None = None) -> Graph:
    return load_onnx_and_proto(model, input_shapes, input_values)[0]


def load_onnx_and_proto(model, input_shapes: dict[str, list[int]] | None = None,
                        input_values: dict[str, object] | None = None) -> tuple[Graph, onnx.ModelProto]:
    """The Graph and the prepared ModelProto it was built from (its dim names and metadata)."""
    warnings: list[str] = []
    proto = prepare_model(model, input_shapes, warnings, input_values)
    return graph_of_prepared(proto, warnings), proto


def graph_of_prepared(proto: onnx.ModelProto, warnings: list[str]) -> Graph:
    """The Graph of a model prepare_model has already read, checked and shape-inferred."""
    graph = build_graph(proto)
    graph.warnings = warnings      # batch axes: passes/infer_shapes.py assigns them from the shapes recorded here
    return graph


def _text(value) -> str:
    """protobuf hands back a string field that is not valid UTF-8 as bytes: names stay names."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def _tensor_value(tensor: onnx.TensorProto, what: str, folder: Path | None = None) -> np.ndarray:
    """A stored tensor's array; one whose data does not fill its dims is bad input, not a crash."""
    try:
        if folder is not None and external_data_helper.uses_external_data(tensor):
            return read_external(tensor, folder)
        return numpy_helper.to_array(tensor)
    except Exception as exc:
        raise ConversionError(f"{what}: its data does not match its dims {list(tensor.dims)} and type "
                              f"({_first_line(exc)})") from None


def build_graph(proto: onnx.ModelProto) -> Graph:
    g = proto.graph
    graph = Graph(g.name or "graph")
    graph.opset = default_opset(proto)
    # com.microsoft's QOperator ops are expanded by passes/expand_qlinear.py; other custom ops are refused
    unsupported_domains = {n.domain for n in g.node if n.domain not in ("", "ai.onnx")
                           and not is_qoperator(n) and not is_genai_op(n)}
    if unsupported_domains:
        ops = sorted({f"{n.domain}.{n.op_type}" for n in g.node if n.domain in unsupported_domains
                      and not is_qoperator(n) and not is_genai_op(n)})
        raise ConversionError(f"unsupported custom-domain ops: {', '.join(ops)}")
    for vi in [*g.input, *g.value_info, *g.output]:
        graph.add_tensor(Tensor(_text(vi.name), _shape_of(vi.type), _dtype_of(vi.type, _text(vi.name))))
    folder = external_folder(proto)
    for init in g.initializer:
        value = _tensor_value(init, f"initializer '{_text(init.name)}'", folder)
        graph.add_tensor(Tensor(_text(init.name), tuple(value.shape), value.dtype, value))
    initializers = {_text(t.name) for t in g.initializer}
    graph.inputs = [_text(i.name) for i in g.input if _text(i.name) not in initializers]
    graph.outputs = [_text(o.name) for o in g.output]
    graph.dim_names = {(_text(vi.name), axis): d.dim_param for vi in g.input if _text(vi.name) in graph.inputs
                       for axis, d in enumerate(vi.type.tensor_type.shape.dim)
                       if d.HasField("dim_param") and not is_anonymous(d.dim_param)}
    for index, n in enumerate(g.node):
        name = _text(n.name) or f"{_text(n.op_type)}_{index}"
        while name in graph.nodes:
            name = f"{name}_{index}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        for key, value in attrs.items():
            if isinstance(value, onnx.TensorProto):
                attrs[key] = _tensor_value(value, f"attribute '{key}' of node '{name}'")
            elif isinstance(value, bytes):
                attrs[key] = value.decode(errors="replace")
            elif isinstance(value, list) and value and all(isinstance(v, bytes) for v in value):
                attrs[key] = [v.decode(errors="replace") for v in value]
        outputs = [_text(o) for o in n.output]
        for out in outputs:
            if out and out not in graph.tensors:
                graph.add_tensor(Tensor(out, None))
        graph.add_node(fill_defaults(Node(name, _text(n.op_type), [_text(i) for i in n.input], outputs, attrs),
                                     graph.opset))
    for name in graph.inputs:
        t = graph.tensors[name]
        if t.shape is None:
            raise ConversionError(f"input '{name}' has no shape; give one with --input-shape {name}=DIMS")
        known = [d for d in t.shape if d is not None]
        if math.prod(known) * max(t.dtype.itemsize, 4) > MAX_INPUT_BYTES:
            raise ConversionError(f"input '{name}' of shape {list(t.shape)} would need more than "
                                  f"{MAX_INPUT_BYTES >> 30} GiB")
    return graph

"""Give Resize nodes upgraded from Upsample (opset 7/9) or Resize-10 their old semantics.

onnx's version converter turns them into Resize-11+ nodes without a
coordinate_transformation_mode, which then means half_pixel; the old ops are
asymmetric, and their nearest rounding (onnxruntime's "simple" rule) truncates when
upsampling and rounds up when downsampling. Both are written out explicitly here.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from converter.ir import ConversionError


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _nearest_mode(node: onnx.NodeProto, scales: np.ndarray | None, was_upsample: bool) -> str:
    if was_upsample:                   # Upsample's scales are >= 1
        return "floor"
    if scales is None:
        raise ConversionError(f"opset-10 Resize node '{node.name}': nearest rounding depends on scales "
                              "that are computed at run time")
    changed = scales[scales != 1]
    if np.all(changed > 1):
        return "floor"
    if np.all(changed < 1):
        return "ceil"
    raise ConversionError(f"opset-10 Resize node '{node.name}': scales {scales.tolist()} both up- and "
                          "downsample, which rounds differently per axis")


def restore_legacy_resize(original: onnx.ModelProto, upgraded: onnx.ModelProto) -> onnx.ModelProto:
    """`upgraded` with the old semantics on every Resize that came from an opset < 11 node."""
    legacy = {n.output[0]: n.op_type for n in original.graph.node if n.op_type in ("Upsample", "Resize")}
    if not legacy:
        return upgraded
    constants = _constants(upgraded.graph)
    for node in upgraded.graph.node:
        if node.op_type != "Resize" or node.output[0] not in legacy:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        del node.attribute[:]
        attrs["coordinate_transformation_mode"] = "asymmetric"
        if attrs.get("mode", b"nearest") in (b"nearest", "nearest"):
            scales = constants.get(node.input[2]) if len(node.input) > 2 else None
            attrs["nearest_mode"] = _nearest_mode(node, scales, legacy[node.output[0]] == "Upsample")
        node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    return upgraded

"""ONNX attribute defaults from onnx's own op schemas, so lowerings read `node.attrs[name]` instead of
retyping the spec's defaults (and cannot disagree with it)."""
from __future__ import annotations

from functools import lru_cache

import onnx
from onnx import defs

from converter.ir import Node

# schema defaults that are not the op's meaning: RNN's lists two activations whatever the direction,
# while the spec's text and onnxruntime use one (Tanh) per direction
NOT_FILLED = {("RNN", "activations")}


@lru_cache(maxsize=None)
def schema_defaults(op: str, opset: int) -> dict:
    """Attribute -> default of the default-domain op `op` as of `opset`; empty for ops onnx does not
    know there (ncnn layers, ops newer than the opset). Values are shaped as the loader shapes them:
    strings decoded, lists as lists."""
    try:
        schema = defs.get_schema(op, opset, "")
    except defs.SchemaError:
        return {}
    found = {}
    for name, attr in schema.attributes.items():
        # an AttributeProto without a name is "no default"
        if attr.default_value.name and (op, name) not in NOT_FILLED:
            found[name] = _plain(onnx.helper.get_attribute_value(attr.default_value))
    return found


def _plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def fill_defaults(node: Node, opset: int) -> Node:
    """Add the schema's default for each attribute the ONNX node leaves out; an ncnn layer is untouched."""
    if not node.ncnn:
        for name, value in schema_defaults(node.op, opset).items():
            node.attrs.setdefault(name, list(value) if isinstance(value, list) else value)
    return node

"""Tell a truncated ONNX file from a file that is no ONNX model at all, by walking the
top-level protobuf fields of ModelProto: when they read as a model's fields until one runs
past the end of the file, the file was cut short (an interrupted download or copy)."""
from __future__ import annotations

# ModelProto's field numbers (onnx.proto): ir_version, producer, ..., graph, opset_import, ...
MODEL_FIELDS = {1, 2, 3, 4, 5, 6, 7, 8, 14, 20, 25, 26}
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            return None
    return None          # the file ends inside a number


def truncated_at(data: bytes) -> int | None:
    """The offset of the model field that runs past the end, when `data` starts as an ONNX
    model (ir_version first, as every exporter writes) and is cut short; else None."""
    if not data or data[0] != (1 << 3 | VARINT):
        return None
    pos = 0
    while pos < len(data):
        start = pos
        tag = _varint(data, pos)
        if tag is None:
            return start
        number, wire = tag[0] >> 3, tag[0] & 7
        if number not in MODEL_FIELDS:
            return None
        pos = tag[1]
        if wire == VARINT:
            value = _varint(data, pos)
            if value is None:
                return start
            pos = value[1]
        elif wire in (FIXED64, FIXED32):
            pos += 8 if wire == FIXED64 else 4
        elif wire == LENGTH:
            size = _varint(data, pos)
            if size is None:
                return start
            pos = size[1] + size[0]
        else:
            return None
        if pos > len(data):
            return start
    return None

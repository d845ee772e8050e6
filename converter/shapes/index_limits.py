"""How large a random integer input may be: the smallest table it indexes.

verify and the generated script feed seeded random integers where the user gives none; a token id
or token type past its embedding table is an out-of-bounds Gather in onnxruntime (sudachi's ALBERT:
a token-type table of 2 rows). An integer input is followed through ops that only move or retype
it to every Gather (or GatherElements) it indexes over a constant table; the draw stays below the
smallest such table.
"""
from __future__ import annotations

import onnx

MOVES = {"Cast", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Expand", "Slice", "Concat",
         "Transpose", "Tile"}
DEFAULT_HIGH = 4        # exclusive bound of a random integer nothing bounds


def index_limits(proto: onnx.ModelProto) -> dict[str, int]:
    """{integer input: exclusive upper bound of the indices it may hold}, for inputs that index tables."""
    shapes = {t.name: list(t.dims) for t in proto.graph.initializer}
    for node in proto.graph.node:        # Constant nodes hold tables too
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            shapes[node.output[0]] = list(node.attribute[0].t.dims)
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in proto.graph.node:
        for name in set(node.input):
            consumers.setdefault(name, []).append(node)
    limits = {}
    for vi in proto.graph.input:
        if vi.name in shapes or vi.type.tensor_type.elem_type not in _INTEGER:
            continue
        bound, seen, todo = None, set(), [vi.name]
        while todo:
            tensor = todo.pop()
            if tensor in seen:
                continue
            seen.add(tensor)
            for node in consumers.get(tensor, []):
                if node.op_type in ("Gather", "GatherElements") and node.input[1] == tensor \
                        and node.input[0] in shapes:
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                    table = shapes[node.input[0]]
                    if table:
                        rows = table[axis % len(table)]
                        bound = rows if bound is None else min(bound, rows)
                elif node.op_type in MOVES and node.input and node.input[0] == tensor:
                    todo.extend(node.output)
        if bound is not None:
            limits[vi.name] = bound
    return limits


_INTEGER = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
            onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def random_high(limits: dict[str, int], name: str) -> int:
    """The exclusive bound verify draws input `name`'s random integers under: below the smallest
    table it indexes (at most DEFAULT_HIGH); an integer that indexes nothing is most often a mask
    (0 or 1: ALBERT's (1 - mask) * finfo.min is inf at a mask of 3)."""
    if name not in limits:
        return 2
    return max(1, min(DEFAULT_HIGH, limits[name]))

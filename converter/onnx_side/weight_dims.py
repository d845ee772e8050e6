"""Input dims the weights fix: an input read directly by a MatMul/Gemm with a constant K x N weight
must have K in its last dim, and one read by a Conv with a constant weight must have
weight channels x group channels. Left dynamic, verify picks another size that onnxruntime refuses,
and a wrong-width feed crashes ncnn (madmom's chroma_dnn: MatMul by 1575 x 256, input [?, ?])."""
from __future__ import annotations

import onnx


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def fixed_by_weights(proto: onnx.ModelProto, node: onnx.NodeProto, tensor: str,
                     weights: dict[str, list[int]]) -> tuple[int, int] | None:
    """(axis, extent) of `tensor` that `node`'s constant weight fixes, if any (axis -1: the last)."""
    if not node.input or node.input[0] != tensor or len(node.input) < 2 or node.input[1] not in weights:
        return None
    w = weights[node.input[1]]
    if node.op_type == "MatMul" and len(w) == 2:
        return -1, w[0]
    if node.op_type == "Gemm" and len(w) == 2 and not _attr(node, "transA", 0):
        return -1, w[1] if _attr(node, "transB", 0) else w[0]
    if node.op_type == "Conv" and len(w) >= 3:
        return 1, w[1] * _attr(node, "group", 1)
    return None


def fix_input_dims_from_weights(proto: onnx.ModelProto, given: set[str]) -> None:
    """Fix each dynamic input dim (of inputs without --input-shape) that a weight fixes, in place."""
    weights = {t.name: list(t.dims) for t in proto.graph.initializer}
    for vi in proto.graph.input:
        if vi.name in weights or vi.name in given or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = vi.type.tensor_type.shape.dim
        for node in proto.graph.node:
            fixed = fixed_by_weights(proto, node, vi.name, weights)
            if fixed is None or not len(dims):
                continue
            axis, extent = fixed
            dim = dims[axis % len(dims)]
            if not dim.HasField("dim_value") and extent > 0:
                dim.Clear()
                dim.dim_value = extent

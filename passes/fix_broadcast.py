"""Make every two-input BinaryOp compute numpy's broadcast, not ncnn's.

ncnn aligns a lower-rank operand to the OUTER axes; numpy (ONNX) aligns the
trailing ones. For each operand we compute the ncnn shape numpy's rule asks
for: pad the ONNX shape with leading ones to the result's rank, then drop the
result's batch axis. An operand whose ncnn shape differs is reshaped: a
constant gets a reshaped copy (its MemoryData dims change, no layer), a
computed tensor gets a Reshape layer, written with copy (0) / infer (-1)
codes where extents are unknown. Operands already in place get nothing.
"""
from __future__ import annotations

from converter.ir import ConversionError, Graph, Node, Shape, Tensor
from converter.ncnn_side.axes import reshape_params, same_named
from converter.shapes.arithmetic import broadcast_shapes


def numpy_target(operand: Tensor, result: Tensor) -> Shape:
    """The ncnn shape under which ncnn's equal-rank broadcast equals numpy's."""
    aligned = (1,) * (result.rank - operand.rank) + tuple(operand.shape)
    return Tensor("", aligned, batch_axis=result.batch_axis).ncnn_shape


def same_layout(a: Shape, b: Shape) -> bool:
    """Same rank and the extent-1 axes in the same places (unknown extents are not 1)."""
    return len(a) == len(b) and all((x == 1) == (y == 1) for x, y in zip(a, b))


def insert_ones_params(source: Shape, target: Shape) -> dict[int, int]:
    """ncnn Reshape params turning `source` into `target` (target = source with ones inserted)."""
    src_axes = [i for i, d in enumerate(source) if d != 1]
    dst_axes = [i for i, d in enumerate(target) if d != 1]
    if len(src_axes) != len(dst_axes):
        raise ValueError(f"cannot reshape {source} to {target} by inserting ones")
    return reshape_params(target, same_named(len(source), len(target), dict(zip(dst_axes, src_axes))))


def fix_broadcast(graph: Graph) -> dict:
    inserted = relaid = 0
    done: dict[tuple[str, Shape], str] = {}     # (operand, target) -> reshaped tensor, shared
    for node in list(graph.nodes.values()):
        if node.op != "BinaryOp" or node.params.get(1, 0) or len(node.inputs) != 2:
            continue
        result = graph.tensors[node.outputs[0]]
        _check_broadcastable(graph, node, result)
        for slot, name in enumerate(node.inputs):
            operand = graph.tensors[name]
            if operand.shape is None or result.shape is None:
                raise ConversionError(f"{node.describe()}: operand ranks unknown, cannot check broadcast")
            target = numpy_target(operand, result)
            if same_layout(operand.ncnn_shape, target):
                continue
            key = (name, target)
            if key not in done:
                done[key] = _reshaped(graph, node, operand, result, target)
                inserted += not operand.is_constant
                relaid += operand.is_constant
            graph.replace_input(node, slot, done[key])
    return {"reshapes_inserted": inserted, "constants_relaid": relaid}


def left_unfixed(graph: Graph) -> list[str]:
    """The two-input BinaryOps this pass would have changed: what a conversion without it
    (verify --no-broadcast-fix) leaves to ncnn's own broadcast rule."""
    left = []
    for node in graph.nodes.values():
        if node.op != "BinaryOp" or node.params.get(1, 0) or len(node.inputs) != 2:
            continue
        result = graph.tensors[node.outputs[0]]
        operands = [graph.tensors[name] for name in node.inputs]
        if result.shape is not None and any(o.shape is not None and not same_layout(o.ncnn_shape, numpy_target(o, result))
                                            for o in operands):
            left.append(node.name)
    return left


def _check_broadcastable(graph: Graph, node: Node, result: Tensor) -> None:
    """Operands that numpy could not broadcast to the result are a broken model, not ours to fix."""
    shapes = [graph.tensors[t].shape for t in node.inputs]
    if any(s is None for s in shapes) or result.shape is None:
        return
    try:
        broadcast = broadcast_shapes(*shapes)
    except ValueError:
        broadcast = None
    if broadcast is None or len(broadcast) != result.rank or any(
            b is not None and r is not None and b != r for b, r in zip(broadcast, result.shape)):
        raise ConversionError(f"{node.describe()}: operands {[list(s) for s in shapes]} do not broadcast to "
                              f"the result {list(result.shape)}")


def _reshaped(graph: Graph, node: Node, operand: Tensor, result: Tensor, target: Shape) -> str:
    if operand.is_constant:
        return graph.add_constant(f"{operand.name}_bcast", operand.value.reshape(target)).name
    try:
        params = insert_ones_params(operand.ncnn_shape, target)
    except ValueError as exc:
        raise ConversionError(f"{node.describe()}: broadcasting '{operand.name}' {list(operand.shape)} "
                              f"needs a reshape ncnn cannot express: {exc}") from None
    aligned = (1,) * (result.rank - operand.rank) + tuple(operand.shape)
    out = graph.add_tensor(Tensor(graph.fresh_name(f"{operand.name}_bcast"), aligned,
                                  operand.dtype, batch_axis=result.batch_axis))
    graph.add_node(Node(graph.fresh_name(f"{node.name}_bcast"), "Reshape", [operand.name], [out.name],
                        params=params, ncnn=True, origin=node.origin))
    return out.name


def check_binary_ranks(graph: Graph) -> None:
    """Invariant after this pass: two-input BinaryOps have operands of equal ncnn rank."""
    for node in graph.nodes.values():
        if node.op == "BinaryOp" and len(node.inputs) == 2:
            a, b = (graph.tensors[t].ncnn_shape for t in node.inputs)
            if len(a) != len(b):
                raise AssertionError(f"BinaryOp '{node.name}' has operands of ncnn shapes {a} and {b}")

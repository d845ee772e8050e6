"""Unroll every Loop whose trip count is a constant and whose body keeps its condition true.

torch exports `tensor_split` at given indices (and other Python loops over constants) as a Loop
with a constant trip count, a condition the body passes on unchanged, and a sequence it appends
to. ncnn has no loops, but such a Loop is a fixed chain of copies of its body: copy k reads the
iteration number k and the condition as constants (with the rank the body declares for them, as
onnxruntime feeds them) and the carried values copy k - 1 made; the last copy's carried values
are the Loop's results, and each scan output is the copies' values stacked on a new first axis
(Unsqueeze + Concat). The copies are then folded or their shapes inferred, in order, like an
inlined If's branch (passes/inline_if.py), and so is everything downstream of the Loop.

Left for inline_if to refuse (naming the node): a trip count not known when converting, a
condition input that is not a constant true, a body whose condition output is anything but a
constant true or the condition it was given, more than MAX_TRIPS copies, and no trip at all
(the results would be the initial values and empty scans, which ncnn cannot hold). One walk;
each copy is visited once.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import onnx

from converter.ir import Graph, Node, Tensor
from converter.rewrite.fold import fold_node
from converter.rewrite.subgraphs import incomplete_shapes, refine_shapes, splice_subgraph

MAX_TRIPS = 64


def _constant_true(graph: Graph, name: str) -> bool:
    value = graph.value(name) if name else None
    return value is not None and value.size == 1 and bool(value.reshape(-1)[0])


def _keeps_condition(body: onnx.GraphProto, graph: Graph) -> bool:
    """The body's condition output is its condition input or a constant true, through Identities."""
    made = {o: n for n in body.node for o in n.output}
    inits = {i.name for i in body.initializer}
    name = body.output[0].name
    while True:
        if name == body.input[1].name:
            return True
        node = made.get(name)
        if node is None:
            if name in inits:
                value = onnx.numpy_helper.to_array(next(i for i in body.initializer if i.name == name))
                return value.size == 1 and bool(value.reshape(-1)[0])
            return _constant_true(graph, name)
        if node.op_type == "Identity":
            name = node.input[0]
        elif node.op_type == "Constant" and node.attribute[0].name == "value":
            value = onnx.numpy_helper.to_array(node.attribute[0].t)
            return value.size == 1 and bool(value.reshape(-1)[0])
        else:
            return False


def _trips(graph: Graph, loop: Node) -> int | None:
    """The number of copies to make, or None where this Loop stays a Loop."""
    body = loop.attrs["body"]
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in body.node for a in n.attribute):
        return None            # an If or Loop inside would need the copy's names when inline_if splices it
    inputs = loop.inputs + ["", ""]
    count = graph.value(inputs[0]) if inputs[0] else None
    if count is None or count.size != 1 or (inputs[1] and not _constant_true(graph, inputs[1])):
        return None
    trips = int(count.reshape(-1)[0])
    if not 0 < trips <= MAX_TRIPS or not _keeps_condition(body, graph):
        return None
    return trips


def _counter(graph: Graph, declared: onnx.ValueInfoProto, value, dtype) -> str:
    """A constant for the iteration number or condition, of the rank the body declares (scalar or [1])."""
    tt = declared.type.tensor_type
    rank1 = tt.HasField("shape") and len(tt.shape.dim) == 1
    return graph.add_constant(f"{declared.name}_value", np.array([value] if rank1 else value, dtype)).name


def _unroll(graph: Graph, loop: Node, trips: int) -> list[Node]:
    """Replace `loop` by `trips` copies of its body; returns the new nodes in order."""
    body: onnx.GraphProto = onnx.GraphProto()
    body.CopyFrom(loop.attrs["body"])
    del body.value_info[:]                     # shapes may differ per copy: inferred again for each
    for out in body.output:
        out.type.tensor_type.ClearField("shape")
    carried = len(loop.inputs) - 2
    scans = len(body.output) - 1 - carried
    graph.remove_node(loop)
    values = list(loop.inputs[2:])
    spliced, scanned = [], [[] for _ in range(scans)]
    for k in range(trips):
        names = {}
        names[body.input[0].name] = _counter(graph, body.input[0], k, np.int64)
        names[body.input[1].name] = _counter(graph, body.input[1], True, np.bool_)
        names.update({vi.name: v for vi, v in zip(body.input[2:], values)})
        last = k == trips - 1
        targets = [graph.fresh_name(f"{loop.name}_cond{k}")]
        targets += [out if last and out else graph.fresh_name(f"{loop.name}_carried{k}")
                    for out in loop.outputs[:carried] + [""] * (carried - len(loop.outputs[:carried]))]
        targets += [graph.fresh_name(f"{loop.name}_scan{k}") for _ in range(scans)]
        for name in targets:
            if name not in graph.tensors:
                graph.add_tensor(Tensor(name, None))
        spliced += splice_subgraph(graph, loop, body, names, {}, targets)
        values = targets[1:1 + carried]
        for s in range(scans):
            scanned[s].append(targets[1 + carried + s])
    axis = graph.add_constant(f"{loop.name}_axis", np.array([0], np.int64)).name
    for s, out in enumerate(loop.outputs[carried:carried + scans]):
        if not out:
            continue
        rows = []
        for item in scanned[s]:
            row = graph.fresh_name(f"{item}_row")
            graph.add_tensor(Tensor(row, None))
            spliced.append(graph.add_node(Node(graph.fresh_name(f"{loop.name}_row"), "Unsqueeze", [item, axis],
                                               [row], origin=loop.name)))
            rows.append(row)
        spliced.append(graph.add_node(Node(graph.fresh_name(f"{loop.name}_stack"), "Concat", rows, [out],
                                           {"axis": 0}, origin=loop.name)))
    for node in spliced:
        node.origin = node.origin or loop.name
    return spliced


def unroll_loops(graph: Graph) -> dict:
    if not any(n.op == "Loop" for n in graph.nodes.values() if not n.ncnn):
        return {}
    changed: set[str] = set()
    unrolled, failures = 0, {}
    work = deque(graph.topological())
    while work:
        node = work.popleft()
        if node.name not in graph.nodes or node.ncnn:
            continue
        trips = _trips(graph, node) if node.op == "Loop" else None
        if trips is not None:
            work.extendleft(reversed(_unroll(graph, node, trips)))
            changed.update(node.outputs)
            unrolled += 1
        elif node.op != "Loop" and (changed.intersection(node.inputs) or incomplete_shapes(graph, node)):
            outputs = list(node.outputs)
            if fold_node(graph, node, failures) or refine_shapes(graph, node):
                changed.update(outputs)
    return {"loops_unrolled": unrolled}

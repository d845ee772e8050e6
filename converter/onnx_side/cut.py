"""Cutting an ONNX model where ncnn stops: the subgraph up to chosen tensors (`--outputs`), and the
split of a model into the head ncnn computes and the tail it has no layers for (`--host-tail`).

A refusal that a cut can get around is a `CutRefusal`: it names the tensors its nodes compute. The
tail is every node downstream of those, plus the integer and constant arithmetic that feeds it
(indices, sizes, thresholds: ncnn holds no integers, and a constant costs the host nothing), so the
head hands over float tensors only. The cut tensors are what the head computes for the tail.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import onnx

from converter.ir import ConversionError

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}


class CutRefusal(ConversionError):
    """A refusal of nodes that a host tail could run: `tensors` are what they compute (ONNX names)."""

    def __init__(self, message: str, tensors: list[str]):
        super().__init__(message)
        self.tensors = list(tensors)


@dataclass
class Cut:
    head_outputs: list[str]     # the tensors ncnn computes: the tail's inputs and the model's own outputs
    tail_inputs: list[str]      # what the tail reads: head outputs and graph inputs
    tail_outputs: list[str]     # the model's outputs the tail computes
    refused: list[str]          # the refused nodes' names


def node_reads(node: onnx.NodeProto) -> list[str]:
    """A node's inputs and the outer names its subgraphs (If/Loop/Scan bodies) read."""
    reads = [i for i in node.input if i]
    for attr in node.attribute:
        for g in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
            defined = {i.name for i in g.input} | {t.name for t in g.initializer}
            defined |= {o for n in g.node for o in n.output}
            reads += [r for n in g.node for r in node_reads(n) if r not in defined]
    return list(dict.fromkeys(reads))


def _types(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    types = {vi.name: vi.type for vi in [*graph.value_info, *graph.input, *graph.output]}
    types.update({t.name: onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims)) for t in graph.initializer})
    return types


def subgraph(proto: onnx.ModelProto, outputs: list[str], inputs: list[str] = ()) -> onnx.ModelProto:
    """The model computing `outputs`, from `inputs` (cut tensors fed instead of computed) and the graph
    inputs it still needs; the nodes kept keep their order."""
    g = proto.graph
    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    types = _types(g)
    initializers = {t.name for t in g.initializer}
    graph_inputs = [i.name for i in g.input if i.name not in initializers]
    unknown = [o for o in outputs if o not in producer and o not in graph_inputs and o not in initializers]
    if unknown:
        raise ConversionError(f"--outputs: the model has no tensor(s) {', '.join(unknown)}")
    stop, kept, needed = set(inputs), set(), set()
    stack = list(outputs)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        if name in stop or name not in producer:
            continue
        index = producer[name]
        if index not in kept:
            kept.add(index)
            stack.extend(node_reads(g.node[index]))
    untyped = [t for t in [*outputs, *inputs] if t in needed and t not in types]
    if untyped:
        raise ConversionError(f"cannot cut at tensor(s) {', '.join(untyped)}: shape inference gave no type")
    new = onnx.helper.make_graph(
        [g.node[i] for i in sorted(kept)], g.name,
        [onnx.helper.make_value_info(t, types[t]) for t in [*graph_inputs, *inputs]
         if t in needed and (t in stop or t not in producer)],
        [onnx.helper.make_value_info(t, types[t]) for t in outputs],
        [t for t in g.initializer if t.name in needed and t.name not in stop],
        value_info=[vi for vi in g.value_info if vi.name in needed and vi.name not in set(outputs) | stop])
    model = onnx.helper.make_model(new, opset_imports=list(proto.opset_import), ir_version=proto.ir_version,
                                   producer_name=proto.producer_name or "onnx2ncnn")
    model.functions.extend(proto.functions)
    model.metadata_props.extend(proto.metadata_props)
    return model


def plan_cut(proto: onnx.ModelProto, refused_tensors: list[str]) -> Cut | None:
    """Where to split `proto` so that the nodes computing `refused_tensors` and all after them run on
    the host; None when those tensors are not the model's own (made by a rewrite)."""
    g = proto.graph
    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    refused = sorted({producer[t] for t in refused_tensors if t in producer})
    if not refused:
        return None
    reads = [node_reads(n) for n in g.node]
    consumers: dict[str, list[int]] = defaultdict(list)
    for i, names in enumerate(reads):
        for name in names:
            consumers[name].append(i)
    tail: set[int] = set()
    stack = list(refused)
    while stack:                    # everything downstream of a refused node
        i = stack.pop()
        if i not in tail:
            tail.add(i)
            stack.extend(c for o in g.node[i].output for c in consumers[o])
    types = _types(g)
    constant = _constants(g, reads)
    stack = [r for i in tail for r in reads[i]]
    while stack:                    # and the integer / constant arithmetic it reads
        name = stack.pop()
        index = producer.get(name)
        if index is None or index in tail:
            continue
        kind = types[name].tensor_type.elem_type if name in types else None
        if name in constant or (kind is not None and kind not in FLOAT_TYPES):
            tail.add(index)
            stack.extend(reads[index])
    initializers = {t.name for t in g.initializer}
    made_in_tail = {o for i in tail for o in g.node[i].output}
    tail_inputs = list(dict.fromkeys(r for i in sorted(tail) for r in reads[i]
                                     if r not in made_in_tail and r not in initializers))
    graph_inputs = {i.name for i in g.input}
    outputs = [o.name for o in g.output]
    head_outputs = [t for t in tail_inputs if t not in graph_inputs]
    head_outputs += [o for o in outputs if o not in made_in_tail and o not in head_outputs and o not in graph_inputs]
    return Cut(head_outputs, tail_inputs, [o for o in outputs if o in made_in_tail],
               [g.node[i].name or g.node[i].op_type for i in refused])


def _constants(g: onnx.GraphProto, reads: list[list[str]]) -> set[str]:
    """Tensors computed from initializers and Constant nodes alone (ONNX's node order is topological)."""
    known = {t.name for t in g.initializer}
    graph_inputs = {i.name for i in g.input} - known
    for node, names in zip(g.node, reads):
        if all(r in known and r not in graph_inputs for r in names):
            known.update(o for o in node.output if o)
    return known


def cut_hint(cut: Cut | None) -> str:
    """What a refusal adds when a cut gets around it: the tensors to convert up to, pasteable."""
    if cut is None or not cut.head_outputs:
        return ""
    names = ",".join(cut.head_outputs)
    return (f"; ncnn can compute the model up to tensor(s) {', '.join(cut.head_outputs)}: convert up to them "
            f"with --outputs {names}, or add --host-tail to run the rest ({len(cut.refused)} refused node(s) and "
            f"what follows) with onnxruntime after ncnn")

"""Which graph inputs ncnn reads as int32 bits, and which read them as numbers.

ncnn blobs are float32, but its Embed layer reads its word indices as int32 bits. A token-id
input feeding an Embed (through layers that only move bits: Reshape, Noop, Split, Crop, ...)
must be fed as an int32 Mat; every other input, integer or boolean in ONNX included, is fed
as float32 numbers. One input read both ways cannot be fed either way.
"""
from __future__ import annotations

from converter.ir import Graph, Node
from converter.shapes.symbolic import REFS

# ncnn layers that copy bits without reading them as numbers
NCNN_MOVES_BITS = {"Noop", "Reshape", "Split", "Crop", "Slice", "Permute", "Flatten", "Concat"}
# ONNX ops that do the same when their data input (slot 0) is an integer tensor
ONNX_MOVES_BITS = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Slice", "Concat"}
SHAPE_ONLY = {"Shape", "Size"}


def _reads_as(graph: Graph, node: Node, slot: int) -> str:
    """'bits' (passes the bits on), 'index' (an embedding's word index), 'shape', or 'number'."""
    if node.ncnn:
        if node.op == "Embed":
            return "index"
        if node.op in ("Reshape", "Interp", "Crop") and slot > 0:    # an expression's or a size reference's
            return "shape"                                             # extra bottom: only its shape
        return "bits" if node.op in NCNN_MOVES_BITS else "number"
    if node.op in SHAPE_ONLY or (node.op in ("Reshape", "Slice", "Unsqueeze", "Squeeze") and slot > 0) \
            or slot >= len(node.inputs) - len(node.meta.get(REFS, [])):      # named by sizes' terms
        return "shape"
    if node.op == "GatherBlockQuantized":          # com.microsoft's block-quantized embedding
        return "index" if slot == 1 else "number"
    if node.op == "Gather":
        if slot == 1 and graph.tensors[node.inputs[0]].is_constant:
            return "index"
        return "bits" if slot == 0 and graph.value(node.inputs[1]) is not None else "number"
    if node.op == "Cast":
        return "bits" if all(graph.tensors[o].dtype.kind in "iu" for o in node.outputs) else "number"
    return "bits" if node.op in ONNX_MOVES_BITS else "number"


def readers(graph: Graph, name: str) -> tuple[list[Node], list[Node]]:
    """(nodes reading tensor `name`'s value as word indices, nodes reading it as numbers),
    following it through bit-moving layers."""
    index, number, seen, todo = [], [], set(), [name]
    while todo:
        tensor = todo.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        for node in {n.name: n for n in graph.consumers(tensor)}.values():
            for slot in (i for i, t in enumerate(node.inputs) if t == tensor):
                role = _reads_as(graph, node, slot)
                if role == "bits":
                    todo.extend(o for o in node.outputs if o)
                elif role == "index":
                    index.append(node)
                elif role == "number":
                    number.append(node)
    return index, number


def ncnn_dtype(graph: Graph, name: str) -> str:
    """What a caller feeds ncnn for input `name`: 'int32' bits for an Embed's word indices, else 'float32'."""
    index, _ = readers(graph, name)
    return "int32" if index else "float32"


def output_dtype(graph: Graph, name: str) -> str:
    """What ncnn gives for blob `name`: 'int32' when its bits come unchanged (through bit-moving
    layers only) from inputs all fed as int32 (an ONNX model returning its input_ids), else
    'float32'. Every reader of an output (verify, run, the generated script) follows this."""
    sources, seen, todo = [], set(), [name]
    while todo:
        tensor = todo.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        node = graph.producer(tensor)
        if node is None or node.op == "Input":
            if tensor not in graph.inputs:
                return "float32"            # a constant: MemoryData holds float numbers
            sources.append(tensor)
        elif _moves_bits_to(graph, node):
            todo.extend(node.inputs[:len(node.inputs) if node.op == "Concat" else 1])
        else:
            return "float32"
    return "int32" if sources and all(ncnn_dtype(graph, s) == "int32" for s in sources) else "float32"


def _moves_bits_to(graph: Graph, node: Node) -> bool:
    if node.ncnn:
        return node.op in NCNN_MOVES_BITS
    return _reads_as(graph, node, 0) == "bits"

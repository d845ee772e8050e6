"""Tensor sequences whose make-up is known when converting become the tensors they hold.

ncnn has no sequences, but torch's exports use them for lists of tensors: `tensor_split` builds one
with SequenceEmpty and SequenceInsert (in an unrolled Loop, passes/unroll_loops.py) or
SplitToSequence, and reads items with SequenceAt at constant positions. Followed in one walk, each
sequence is a list of tensor names: SequenceEmpty, SequenceConstruct, SequenceInsert and
SequenceErase at constant positions build the list, SplitToSequence becomes a Split (and Squeezes
for keepdims=0) whose outputs are its items, and the readers become plain ops: SequenceAt an
Identity of the item, ConcatFromSequence a Concat (of Unsqueezes with new_axis), SequenceLength a
constant. Sequence nodes nothing reads any more are dropped; a sequence read in any other way
(a graph output, a run-time position) keeps its nodes, which lowering refuses by name.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.batch_axis import follow_batch_axis

BUILDERS = {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence"}


def _position(graph: Graph, node: Node, slot: int, length: int, default: int) -> int | None:
    """A constant position input (negative counts from the end), or `default` when absent."""
    if len(node.inputs) <= slot or not node.inputs[slot]:
        return default
    value = graph.value(node.inputs[slot])
    if value is None or value.size != 1:
        return None
    pos = int(value.reshape(-1)[0])
    return pos + length if pos < 0 else pos


def _add(graph: Graph, node: Node, op: str, inputs: list[str], shape, attrs=None, out: str | None = None) -> str:
    """A new node `op` made for `node`, with a new output of `shape` unless `out` is given."""
    if out is None:
        out = graph.fresh_name(f"{node.outputs[0]}_item")
        graph.add_tensor(Tensor(out, shape, graph.tensors[inputs[0]].dtype))
    new = graph.add_node(Node(graph.fresh_name(node.name), op, inputs, [out], attrs or {},
                              origin=node.origin or node.name))
    follow_batch_axis(graph, new, graph.tensors[out])
    return out


def _split(graph: Graph, node: Node) -> list[str] | None:
    """SplitToSequence as a Split (plus Squeezes): the items, or None where sizes are unknown."""
    x = graph.tensors[node.inputs[0]]
    axis = node.attrs.get("axis", 0)
    if x.shape is None or x.shape[axis % len(x.shape)] is None:
        return None
    axis %= len(x.shape)
    extent = x.shape[axis]
    split = graph.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    if split is None and len(node.inputs) > 1 and node.inputs[1]:
        return None
    if split is None or split.ndim == 0:
        size = 1 if split is None else int(split)
        sizes = [min(size, extent - start) for start in range(0, extent, size)]
    else:
        sizes = [int(s) for s in split]
    squeeze = split is None and not node.attrs.get("keepdims", 1)
    pieces = []
    for size in sizes:
        piece = graph.fresh_name(f"{node.outputs[0]}_piece")
        graph.add_tensor(Tensor(piece, x.shape[:axis] + (size,) + x.shape[axis + 1:], x.dtype))
        pieces.append(piece)
    inputs = [x.name, graph.add_constant(f"{node.name}_sizes", np.array(sizes, np.int64)).name]
    split_node = graph.add_node(Node(graph.fresh_name(node.name), "Split", inputs, pieces, {"axis": axis},
                                     origin=node.origin or node.name))
    for piece in pieces:
        follow_batch_axis(graph, split_node, graph.tensors[piece])
    if not squeeze:
        return pieces
    axes = graph.add_constant(f"{node.name}_axis", np.array([axis], np.int64)).name
    return [_add(graph, node, "Squeeze", [p, axes], x.shape[:axis] + x.shape[axis + 1:]) for p in pieces]


def _build(graph: Graph, node: Node, seqs: dict[str, list[str]]) -> list[str] | None:
    """The items of the sequence `node` makes, or None where they are not known when converting."""
    op, ins = node.op, node.inputs
    if op == "SequenceEmpty":
        return []
    if op == "SequenceConstruct":
        return list(ins)
    if op == "SplitToSequence":
        return _split(graph, node)
    items = seqs.get(ins[0])
    if items is None:
        return None
    if op == "SequenceInsert":
        pos = _position(graph, node, 2, len(items), len(items))
        return None if pos is None or not 0 <= pos <= len(items) else items[:pos] + [ins[1]] + items[pos:]
    pos = _position(graph, node, 1, len(items), len(items) - 1)             # SequenceErase
    return None if pos is None or not 0 <= pos < len(items) else items[:pos] + items[pos + 1:]


def _read(graph: Graph, node: Node, items: list[str]) -> bool:
    """Replace a reader of a known sequence by plain ops; False where it cannot be."""
    out = node.outputs[0]
    if node.op == "SequenceAt":
        pos = _position(graph, node, 1, len(items), None)
        if pos is None or not 0 <= pos < len(items):
            return False
        t, item = graph.tensors[out], graph.tensors[items[pos]]
        if graph.consumers(out) and t.shape is not None and None not in t.shape and item.shape != t.shape:
            return False        # its readers were inferred from another shape (torch declares trace-time ones)
        graph.remove_node(node)
        t.shape, t.dtype = item.shape, item.dtype
        _add(graph, node, "Identity", [item.name], None, out=out)
        return True
    if node.op == "SequenceLength":
        graph.remove_node(node)
        t = graph.tensors[out]
        t.value, t.shape, t.dtype, t.batch_axis = np.array(len(items), np.int64), (), np.dtype(np.int64), None
        return True
    if node.op == "ConcatFromSequence" and items:
        axis = node.attrs.get("axis")
        shapes = [graph.tensors[i].shape for i in items]
        if axis is None or any(s is None for s in shapes):
            return False
        graph.remove_node(node)
        if node.attrs.get("new_axis", 0):
            where = graph.add_constant(f"{node.name}_axis", np.array([axis], np.int64)).name
            at = axis if axis >= 0 else axis + len(shapes[0]) + 1
            items = [_add(graph, node, "Unsqueeze", [i, where], s[:at] + (1,) + s[at:]) for i, s in zip(items, shapes)]
        _add(graph, node, "Concat", items, None, {"axis": axis}, out=out)
        return True
    return False


def resolve_sequences(graph: Graph) -> dict:
    nodes = [n for n in graph.topological() if not n.ncnn]
    if not any(n.op in BUILDERS for n in nodes):
        return {}
    seqs: dict[str, list[str]] = {}
    read = 0
    for node in nodes:
        if node.op in BUILDERS:
            items = _build(graph, node, seqs)
            if items is not None:
                seqs[node.outputs[0]] = items
        elif node.op in ("SequenceAt", "SequenceLength", "ConcatFromSequence") and node.inputs[0] in seqs:
            read += _read(graph, node, seqs[node.inputs[0]])
    dropped = 0
    for node in reversed(nodes):          # builders nothing reads any more, last first
        if node.op in BUILDERS and node.name in graph.nodes and node.outputs[0] not in graph.outputs \
                and not graph.consumers(node.outputs[0]):
            graph.remove_node(node)
            dropped += 1
    graph.remove_unused_tensors()
    return {"sequence_items_read": read, "sequence_nodes_dropped": dropped}

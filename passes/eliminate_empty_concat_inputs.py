"""Drop the inputs of a Concat that hold nothing (an extent of 0), and what computed only them.

Partial rotary embeddings split each head into a rotated part and a pass-through part, then
concatenate the two; with the rotary factor at 1 the pass-through slice is [d:d], empty. ncnn
cannot hold an empty blob, but the Concat of the rest is the same tensor, so the empty input and
its Slice go (a Concat left with one input lowers to nothing). Static shapes only: an extent known
to be 0 when converting.
"""
from __future__ import annotations

from converter.ir import Graph

from .eliminate_dead import eliminate_dead


def _empty(graph: Graph, name: str) -> bool:
    t = graph.tensors.get(name)
    return bool(name) and t is not None and t.shape is not None and 0 in t.shape


def eliminate_empty_concat_inputs(graph: Graph) -> dict:
    dropped = 0
    for node in graph.topological():
        if node.op != "Concat" or node.ncnn or _empty(graph, node.outputs[0]):
            continue
        kept = [i for i in node.inputs if not _empty(graph, i)]
        if kept and len(kept) < len(node.inputs):
            dropped += len(node.inputs) - len(kept)
            graph.set_inputs(node, kept)
    if dropped:
        eliminate_dead(graph)
    return {"empty_concat_inputs": dropped}

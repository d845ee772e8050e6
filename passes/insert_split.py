"""Route every blob read by more than one layer input through a Split layer.

ncnn tracks one consumer per blob; without Split the real runtime crashed on
such files. `Mul(x, x)` counts as two reads.
"""
from __future__ import annotations

from converter.ir import Graph, Node, Tensor


def insert_split(graph: Graph) -> dict:
    added = 0
    for name in list(graph.tensors):
        readers = graph.consumers(name)
        if len(readers) < 2:
            continue
        t = graph.tensors[name]
        outs = [graph.fresh_name(f"{name}_split") for _ in readers]
        for out in outs:
            graph.add_tensor(Tensor(out, t.shape, t.dtype, batch_axis=t.batch_axis))
        slots = []
        for reader in {n.name: n for n in readers}.values():
            slots += [(reader, i) for i, inp in enumerate(reader.inputs) if inp == name]
        for (reader, slot), out in zip(slots, outs):
            graph.replace_input(reader, slot, out)
        producer = graph.producer(name)
        graph.add_node(Node(graph.fresh_name(f"{name}_splitter"), "Split", [name], outs, ncnn=True,
                            origin=producer.origin if producer else name))
        added += 1
    return {"splits": added}

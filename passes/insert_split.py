"""Route every blob read by more than one layer input through a Split layer.

ncnn tracks one consumer per blob; without Split the real runtime crashed on
such files. `Mul(x, x)` counts as two reads. A graph output that layers also
read counts the extraction as one more read (the runtime segfaulted
extracting it otherwise): its producer writes a fresh blob and the Split
hands the output name back as one of its branches.
"""
from __future__ import annotations

from converter.ir import Graph, Node, Tensor


def check_single_readers(graph: Graph) -> None:
    """Invariant after this pass: every blob is read once (one input slot of one layer), a graph
    output by nothing."""
    for name in graph.tensors:
        reads = graph.use_count(name)          # an output's extraction counts as a read
        if reads > 1:
            raise AssertionError(f"blob '{name}' is read {reads} times without a Split")


def insert_split(graph: Graph) -> dict:
    added = 0
    outputs = set(graph.outputs)
    for name in list(graph.tensors):
        readers = graph.consumers(name)
        is_output = name in outputs
        if len(readers) + is_output < 2:
            continue
        t = graph.tensors[name]
        slots = []
        for reader in {n.name: n for n in readers}.values():
            slots += [(reader, i) for i, inp in enumerate(reader.inputs) if inp == name]
        branches = [_copy(graph, t, f"{name}_split") for _ in slots]
        for (reader, slot), branch in zip(slots, branches):
            graph.replace_input(reader, slot, branch)
        source = name
        if is_output:
            source = _copy(graph, t, f"{name}_pre")
            graph.rename_output(graph.producer(name), name, source)
            branches.insert(0, name)
        producer = graph.producer(source)
        graph.add_node(Node(graph.fresh_name(f"{name}_splitter"), "Split", [source], branches, ncnn=True,
                            origin=producer.origin if producer else name))
        added += 1
    return {"splits": added}


def _copy(graph: Graph, t: Tensor, stem: str) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, t.shape, t.dtype, batch_axis=t.batch_axis))
    return name


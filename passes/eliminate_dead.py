"""Remove layers whose results reach no graph output, in one reverse-topological walk."""
from __future__ import annotations

from converter.ir import Graph


def eliminate_dead(graph: Graph) -> dict:
    live = set(graph.outputs)
    removed = 0
    for node in reversed(graph.topological()):
        if any(out in live for out in node.outputs) or (node.op == "Input" and node.ncnn):
            live.update(filter(None, node.inputs))
        else:
            graph.remove_node(node)
            removed += 1
    graph.remove_unused_tensors()
    return {"dead_removed": removed}

"""Drop the Noop layers that lowering and fold_reshape_chains write for ops that change nothing in ncnn
(an identity Transpose or Cast, a Reshape to the same ncnn shape): their readers read the input.

A Noop still costs a layer run (ghostnetv2 carried 10). Where its output is a graph output, the
producer of its input writes that name instead (when the Noop is that input's only reader). Kept
where it has several inputs, its input is a graph input or read elsewhere and its output a graph
output, or its input and output differ in ncnn shape or dtype in the graph (a reader may have been
built for either). One walk.
"""
from __future__ import annotations

from converter.ir import Graph


def eliminate_noop(graph: Graph) -> dict:
    removed = 0
    for node in graph.topological():
        if not node.ncnn or node.op != "Noop" or len(node.inputs) != 1 or len(node.outputs) != 1:
            continue
        x, y = (graph.tensors[n] for n in (node.inputs[0], node.outputs[0]))
        if x.ncnn_shape is None or x.ncnn_shape != y.ncnn_shape or x.dtype != y.dtype:
            continue
        producer = graph.producer(x.name)
        if y.name not in graph.outputs:
            graph.remove_node(node)
            graph.replace_all_uses(y.name, x.name)
        elif (producer is not None and graph.use_count(x.name) == 1 and x.name not in graph.outputs
              and x.name not in graph.inputs):       # (an input's name is what callers feed)
            graph.remove_node(node)         # the producer writes the output's name itself
            graph.rename_output(producer, x.name, y.name)
        else:
            continue
        removed += 1
    if removed:
        graph.remove_unused_tensors()
    return {"noops_removed": removed}

"""QuantizeLinear moves below the reshapes and transposes it feeds: Q -> Reshape -> DQ -> MatMul
becomes Reshape -> Q -> DQ -> MatMul, which passes/plan_int8.py can make an int8 layer.

QOperator graphs (and quantize_static's transformer graphs) quantize a tensor and then reshape
or transpose the int8 values before the next quantized op reads them. With one scale and zero
point for the whole tensor, quantizing commutes with any op that only moves values, so the Q can
run after it; the int8 layer then quantizes the reshaped float tensor itself. A Q with another
reader, or with a scale per axis (which a transpose would move), stays where it is.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import Graph, Node, Tensor

# ops that only move or pick values of their first input: quantizing before or after gives the same numbers
LAYOUT_OPS = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Split", "Slice"}


def _per_tensor(graph: Graph, q: Node) -> bool:
    scale = graph.value(q.inputs[1])
    zero = graph.value(q.inputs[2]) if len(q.inputs) > 2 and q.inputs[2] else None
    return scale is not None and scale.size == 1 and (zero is None or zero.size == 1)


def _next_layout_op(graph: Graph, q: Node) -> Node | None:
    out = q.outputs[0]
    readers = graph.consumers(out)
    if out in graph.outputs or len(readers) != 1 or readers[0].op not in LAYOUT_OPS:
        return None
    return readers[0] if readers[0].inputs.index(out) == 0 and out not in readers[0].inputs[1:] else None


def _swap(graph: Graph, q: Node, layout: Node) -> list[Node]:
    """The layout op on q's float input, then one q per output (Split has several); returns them."""
    floats = []
    for out in layout.outputs:
        moved = graph.tensors[out]
        floats.append(graph.add_tensor(Tensor(graph.fresh_name(f"{out}_float"), moved.shape,
                                              np.dtype(np.float32), batch_axis=moved.batch_axis)).name)
    graph.remove_node(layout)
    graph.remove_node(q)
    graph.add_node(replace(layout, inputs=[q.inputs[0], *layout.inputs[1:]], outputs=floats))
    return [graph.add_node(replace(q, name=q.name if k == 0 else graph.fresh_name(q.name),
                                   inputs=[f, *q.inputs[1:]], outputs=[out]))
            for k, (f, out) in enumerate(zip(floats, layout.outputs))]


def sink_quantize(graph: Graph) -> dict:
    moved = 0
    work = [n for n in graph.topological() if n.op == "QuantizeLinear" and _per_tensor(graph, n)]
    while work:                 # each step moves a Q one node down: linear overall
        q = work.pop()
        layout = _next_layout_op(graph, q)
        if layout is not None:
            work += _swap(graph, q, layout)
            moved += 1
    return {"quantize_sunk": moved} if moved else {}

"""Move a Relu that reads a Q/DQ pair to before the pair: y -> Q -> DQ -> Relu becomes y -> Relu -> Q -> DQ.

Exact: with an integer zero point z, DQ(Q(y)) <= 0 exactly where y rounds to a step at or below
z, and there Q(Relu(y)) = Q(0) = z gives 0 as well; elsewhere both are DQ(Q(y)). quantize_static
writes Conv -> Q/DQ -> Relu -> Q/DQ -> Conv; after the move the Relu is the Conv's fused activation
(passes/fuse_activation.py) and the next pair repeats the first with the same scale
(passes/eliminate_identity_qdq.py then lets the next int8 Conv read the Relu's output itself).
Runs after plan_int8, on the ONNX graph; one walk over the Relu nodes.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import Graph


def hoist_relu_over_qdq(graph: Graph) -> dict:
    if not any(n.op == "QuantizeLinear" for n in graph):
        return {}
    hoisted = 0
    for relu in [n for n in graph.topological() if n.op == "Relu" and not n.ncnn]:
        dq = graph.producer(relu.inputs[0])
        q = graph.producer(dq.inputs[0]) if dq is not None and dq.op == "DequantizeLinear" else None
        if q is None or q.op != "QuantizeLinear" or graph.use_count(dq.outputs[0]) != 1 \
                or graph.use_count(q.outputs[0]) != 1 or relu.outputs[0] in graph.outputs:
            continue
        # the moved pair writes the Relu's output name (the same values onnxruntime gives it) and a
        # fresh int8 tensor: no blob keeps an ONNX name whose values changed (verify compares by name)
        y, out = q.inputs[0], relu.outputs[0]
        rectified = graph.add_tensor(replace(graph.tensors[y], name=graph.fresh_name(f"{y}_relu"), value=None))
        graph.clip_reference(rectified.name, y, 0.0, np.inf)
        quantized = graph.add_tensor(replace(graph.tensors[q.outputs[0]], name=graph.fresh_name(f"{q.outputs[0]}_relu"),
                                             value=None))
        for node in (relu, dq, q):
            graph.remove_node(node)
        graph.add_node(replace(relu, inputs=[y], outputs=[rectified.name]))
        graph.add_node(replace(q, inputs=[rectified.name, *q.inputs[1:]], outputs=[quantized.name]))
        graph.add_node(replace(dq, inputs=[quantized.name, *dq.inputs[1:]], outputs=[out]))
        hoisted += 1
    if hoisted:
        graph.remove_unused_tensors()
    return {"relus_hoisted": hoisted}

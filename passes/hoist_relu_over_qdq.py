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

from converter.ir import Graph, Tensor


def hoist_relu_over_qdq(graph: Graph) -> dict:
    if not any(n.op == "QuantizeLinear" for n in graph):
        return {}
    hoisted, planned_on = 0, {}
    for plan in graph.int8_plans.values():
        planned_on.setdefault(getattr(plan, "x", None), []).append(plan)
    for relu in [n for n in graph.topological() if n.op == "Relu" and not n.ncnn]:
        dq = graph.producer(relu.inputs[0])
        q = graph.producer(dq.inputs[0]) if dq is not None and dq.op == "DequantizeLinear" else None
        if q is None or q.op != "QuantizeLinear" or graph.use_count(dq.outputs[0]) != 1 \
                or graph.use_count(q.outputs[0]) != 1 or relu.outputs[0] in graph.outputs:
            continue
        y, out = q.inputs[0], relu.outputs[0]
        rectified = graph.add_tensor(replace(graph.tensors[y], name=graph.fresh_name(f"{y}_relu"), value=None))
        graph.replace_all_uses(out, dq.outputs[0])
        graph.remove_node(relu)
        graph.add_node(replace(relu, inputs=[y], outputs=[rectified.name]))
        graph.replace_input(q, 0, rectified.name)
        for plan in planned_on.get(out, []):           # an int8 layer planned on the Relu's output
            plan.x = dq.outputs[0]
        hoisted += 1
    if hoisted:
        graph.remove_unused_tensors()
    return {"relus_hoisted": hoisted}

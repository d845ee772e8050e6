"""Fold an activation layer into the Convolution / InnerProduct that feeds it.

ncnn's conv-like layers apply a fused activation (activation_type 1..6) to
each output value with the same formula as the standalone layer, so
Conv -> ReLU becomes one layer: one pass over the output less, in ncnn and in
the interpreter. The producer's output must be read only by the activation
and must not be a graph output. One walk over the activation layers.
"""
from __future__ import annotations

from converter.ir import Graph, Node
from converter.ncnn_side.layers import SPECS

PRODUCERS = {"Convolution", "ConvolutionDepthWise", "Deconvolution", "InnerProduct"}
ACTIVATION_TYPE, ACTIVATION_PARAMS = 9, 10       # the same param ids in every producer


def fused_form(act: Node) -> tuple[int, list[float]] | None:
    """(activation_type, activation_params) computing what the `act` layer computes."""
    p = SPECS[act.op].resolve(act.params) if act.op in SPECS else None
    if act.op == "ReLU":
        return (1, []) if p.slope == 0 else (2, [p.slope])
    if act.op == "Clip":
        return 3, [p.min, p.max]
    if act.op == "Sigmoid":
        return 4, []
    if act.op == "HardSwish":
        return 6, [p.alpha, p.beta]
    return None


def fuse_activation(graph: Graph) -> dict:
    fused = 0
    for act in [n for n in graph.topological() if n.ncnn and len(n.inputs) == 1]:
        form = fused_form(act)
        producer = graph.producer(act.inputs[0])
        if (form is None or producer is None or producer.op not in PRODUCERS
                or producer.params.get(ACTIVATION_TYPE, 0) != 0 or graph.use_count(act.inputs[0]) != 1):
            continue
        params = dict(producer.params)
        params[ACTIVATION_TYPE] = form[0]
        if form[1]:
            params[ACTIVATION_PARAMS] = form[1]
        graph.fold_into_producer(producer, act, params=params)
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"activations_fused": fused}

"""Fold an activation layer into the Convolution / InnerProduct that feeds it.

ncnn's conv-like layers apply a fused activation (activation_type 1..6) to
each output value with the same formula as the standalone layer, so
Conv -> ReLU becomes one layer: one pass over the output less, in ncnn and in
the interpreter. The producer's output must be read only by the activation
and must not be a graph output. One walk over the activation layers
(converter/rewrite/driver.py).
"""
from __future__ import annotations

from dataclasses import replace

from converter.ir import Graph, Node
from converter.ncnn_side.layers import SPECS
from converter.rewrite.driver import Match, apply, need, rule

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


def _match(graph: Graph, act: Node) -> Match:
    form = fused_form(act)
    producer = graph.producer(act.inputs[0]) if len(act.inputs) == 1 else None
    need(form is not None and producer is not None and producer.op in PRODUCERS,
         "the input is not written by a Convolution, Deconvolution or InnerProduct")
    need(producer.params.get(ACTIVATION_TYPE, 0) == 0, f"the {producer.op} carries an activation already")
    need(graph.use_count(act.inputs[0]) == 1, f"the {producer.op}'s output is read elsewhere too")
    return Match([act, producer], producer=producer, form=form, out=act.outputs[0])


def _build(graph: Graph, m: Match) -> list[Node]:
    params = dict(m.producer.params)
    params[ACTIVATION_TYPE] = m.form[0]
    if m.form[1]:
        params[ACTIVATION_PARAMS] = m.form[1]
    return [replace(m.producer, inputs=list(m.producer.inputs), outputs=[m.out], params=params)]


RULE = rule("fuse_activation", "activations_fused", ("ReLU", "Clip", "Sigmoid", "HardSwish"), _match, _build,
            ncnn=True)


def fuse_activation(graph: Graph) -> dict:
    return apply(graph, RULE)

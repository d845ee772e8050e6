"""Drop the Clip of an emulated QuantizeLinear where the value it clips is already bounded.

An activation QuantizeLinear that runs in float (lowering/quantize.py) is x * (1/s) -> round ->
Clip(lo, hi). The Clip does nothing when the producer of x is bounded so that round(a/s) >= lo and
round(b/s) <= hi (Sigmoid, HardSigmoid: [0, 1]; a Clip; a fused clip): the Clip layer goes. Where
the producer is a Convolution-like layer (fused activation none, ReLU or clip) or a Clip layer read
only by the multiply, it clips x to [L, H] itself, with L, H the float32 values whose product with
1/s rounds exactly to lo, hi: then every x above H became hi before and becomes H -> hi now, every
x below stays as it was, so the quantized value is the same bit for bit and one layer less runs.
The clipped output keeps its ONNX name, and the graph records the clip (graph.reference_clips):
verify compares and feeds that blob as onnxruntime's tensor clipped the same way, which quantizes
to the same values. A graph output is never narrowed.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import Graph, Node

F32 = np.float32
ROUND = 18                       # UnaryOp op_type round (nearbyint: ties to even, as ONNX)
MUL = 2
CONV_LIKE = {"Convolution", "ConvolutionDepthWise", "InnerProduct", "Deconvolution", "DeconvolutionDepthWise"}
ACTIVATION_TYPE, ACTIVATION_PARAMS = 9, 10
# ncnn's Sigmoid is 1 / (1 + exp(-x)) with a polynomial exp: [0, 1] up to rounding, given a margin
UNIT_RANGE = (0.0, 1.0 + 2.0 ** -20)


def _quantize_chain(graph: Graph, clip: Node) -> tuple[Node, Node, float] | None:
    """(round, multiply, 1/s) when `clip` ends a float QuantizeLinear: mul by a scalar, round, clip."""
    rnd = graph.producer(clip.inputs[0])
    if rnd is None or rnd.op != "UnaryOp" or rnd.params.get(0) != ROUND or graph.use_count(rnd.outputs[0]) != 1:
        return None
    mul = graph.producer(rnd.inputs[0])
    if (mul is None or mul.op != "BinaryOp" or mul.params.get(0) != MUL or mul.params.get(1) != 1
            or graph.use_count(mul.outputs[0]) != 1 or F32(mul.params.get(2, 0.0)) <= 0):
        return None
    return rnd, mul, float(mul.params[2])


def _rounded(x, r: float) -> float:
    with np.errstate(over="ignore", invalid="ignore"):      # an unbounded side stays infinite
        return float(np.round(F32(x) * F32(r)))      # float32 product, ties to even, as ncnn computes it


def _bound(q: float, r: float) -> float | None:
    """A float32 x with round(x * r) == q exactly (q a whole number, r > 0): a few ulps from q / r, or
    None (q / r beyond float32, as for a mask's -3.4e38 quantized with a scale to match)."""
    with np.errstate(over="ignore"):
        x = F32(q / r)
    for _ in range(64):
        if not np.isfinite(x):
            return None
        if _rounded(x, r) == q:
            return float(x)
        x = np.nextafter(x, F32(np.inf) if _rounded(x, r) < q else F32(-np.inf))
    return None


def _value_range(node: Node) -> tuple[float, float] | None:
    if node.op in ("Sigmoid", "HardSigmoid"):
        return UNIT_RANGE
    if node.op == "Clip":
        return float(node.params.get(0, -np.inf)), float(node.params.get(1, np.inf))
    if node.op in CONV_LIKE:
        act = node.params.get(ACTIVATION_TYPE, 0)
        if act == 1:
            return 0.0, np.inf
        if act == 3:
            lo, hi = node.params[ACTIVATION_PARAMS]
            return float(lo), float(hi)
        if act == 4:
            return UNIT_RANGE
    return None


def _narrow(graph: Graph, producer: Node, lo: float, hi: float) -> bool:
    """Make `producer` clip to [lo, hi] as well as it did; False where it cannot carry a clip."""
    bounds = _value_range(producer) or (-np.inf, np.inf)
    lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    if producer.op == "Clip":
        producer.params[0], producer.params[1] = lo, hi
        return True
    if producer.op in CONV_LIKE and producer.params.get(ACTIVATION_TYPE, 0) in (0, 1, 3):
        producer.params[ACTIVATION_TYPE], producer.params[ACTIVATION_PARAMS] = 3, [lo, hi]
        return True
    return False


def narrow_quantize_clips(graph: Graph) -> dict:
    dropped = narrowed = 0
    for clip in [n for n in graph.topological() if n.ncnn and n.op == "Clip"]:
        chain = _quantize_chain(graph, clip)
        lo, hi = float(clip.params.get(0, -np.inf)), float(clip.params.get(1, np.inf))
        if chain is None or clip.outputs[0] in graph.outputs or not (float(lo).is_integer() and float(hi).is_integer()):
            continue
        rnd, mul, r = chain
        producer = graph.producer(mul.inputs[0])
        if producer is None:
            continue
        bounds = _value_range(producer)
        if bounds is not None and _rounded(bounds[0], r) >= lo and _rounded(bounds[1], r) <= hi:
            dropped += 1
        elif (graph.use_count(producer.outputs[0]) == 1 and producer.outputs[0] not in graph.outputs
              and None not in (limits := (_bound(lo, r), _bound(hi, r))) and _narrow(graph, producer, *limits)):
            graph.clip_reference(producer.outputs[0], producer.outputs[0], *limits)
            narrowed += 1
        else:
            continue
        # the round writes the Clip's tensor (the same values): an ONNX quantized tensor keeps its name,
        # which verify feeds and compares by
        graph.remove_node(clip)
        graph.remove_node(rnd)
        graph.add_node(replace(rnd, outputs=list(clip.outputs)))
    if dropped or narrowed:
        graph.remove_unused_tensors()
    return {"quantize_clips_dropped": dropped, "quantize_clips_narrowed": narrowed}


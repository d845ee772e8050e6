"""Fast int8 (graph.int8_mode == "fast"): drop the activation Q/DQ pairs, as ncnn's own int8 tools place int8.

ncnn's int8 path (ncnn2table + ncnn2int8) keeps activations in float between layers; only the
Convolution / ConvolutionDepthWise / InnerProduct layers quantize their input themselves (x * scale,
rounded, clamped to -127..127) with the scale the calibration gave. A QDQ model instead rounds every
tensor onto its lattice, which in ncnn costs four float layers per pair (div, round, clip, mul) around
every Add, Mul, Sigmoid...: most of an exact int8 file's time. Here each DequantizeLinear(
QuantizeLinear(x)) on a computed tensor gives x back to its readers, except the int8 layers
passes/plan_int8.py planned, which keep reading the pair until passes/apply_int8.py makes them read x
and quantize it themselves with the pair's scale. A graph output keeps its pair (its values are the
model's contract). Constants behind a pair (weights quantize_static left float) are left to folding.
The dropped pairs are recorded in graph.int8_dropped (QuantizeLinear -> the tensor it quantized) for
the report. One walk over plan_int8's pairs; runs right after plan_int8, on the ONNX graph.
"""
from __future__ import annotations

from converter.ir import Graph

from .plan_int8 import ActivationPair, Int8Plan


def drop_activation_qdq(graph: Graph) -> dict:
    if graph.int8_mode != "fast":
        return {}
    dropped = 0
    for pair in [p for p in graph.int8_plans.values() if isinstance(p, ActivationPair)]:
        quantizer = graph.nodes.get(pair.quantizer)
        if quantizer is None or pair.dq_out in graph.outputs or pair.dq_out not in graph.tensors:
            continue
        x = quantizer.inputs[0]
        if graph.value(x) is not None or any(graph.value(i) is None for i in quantizer.inputs[1:] if i):
            continue
        for reader in {n.name: n for n in graph.consumers(pair.dq_out)}.values():
            plan = graph.int8_plans.get(reader.name)
            if isinstance(plan, Int8Plan) and plan.dq_out == pair.dq_out and reader.inputs[0] == pair.dq_out:
                continue                  # an int8 layer: reads x itself after lowering (apply_int8)
            for slot in [k for k, i in enumerate(reader.inputs) if i == pair.dq_out]:
                graph.replace_input(reader, slot, x)
        graph.int8_dropped[pair.quantizer] = x
        dropped += 1
        # the pair's nodes go now where nothing reads them: fusions count x's readers (Swish's x * sigmoid(x))
        dq = graph.producer(pair.dq_out)
        if not graph.use_count(pair.dq_out):
            graph.remove_node(dq)
        if pair.quantizer in graph.nodes and not any(graph.use_count(o) for o in quantizer.outputs):
            graph.remove_node(quantizer)
    if dropped:
        graph.remove_unused_tensors()
    return {"int8_pairs_dropped": dropped}

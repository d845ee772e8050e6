"""verify of a fast-mode int8 conversion: distances from onnxruntime's int8 run and from the float model.

Fast mode (passes/drop_activation_qdq.py) drops the activation Q/DQ pairs that feed no int8 layer, so its
tensors are no longer onnxruntime's bits up to a step: they lie between the QDQ model's values and the
float model's. Every compared blob gets two figures, relative RMS distance (|got - ref| / |ref|) from
onnxruntime's run of the QDQ model and from its run of the float model: the QDQ model without its
activation Q/DQ pairs (the same dequantized weights and tensor names; `float_proto` when the float
model is known, e.g. under --calibrate, for the outputs). The judgement, per output: the int8 file is
no farther from the float model than onnxruntime's own int8 run is (its int8-vs-float distance is the
noise quantizing this model costs; a wrong scale or weight lands far beyond it). Classifier outputs
(one row of scores) also say whether top-1 agrees with the float model and with onnxruntime's int8.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import onnx

from converter.verification.feeds import onnxruntime_all, to_ncnn_layout


@dataclass
class Int8Distance:
    """One output of one backend, judged against onnxruntime's int8 run's own distance from float."""
    name: str
    backend: str
    passed: bool
    from_int8: float | None = None          # relative RMS distance from onnxruntime's QDQ run
    from_float: float | None = None         # ... from the float model
    ort_int8_from_float: float | None = None
    top1_float: bool | None = None          # classifiers: argmax equals the float model's
    top1_int8: bool | None = None           # ... equals onnxruntime's int8 run's
    error: str | None = None


def rel_rms(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.ravel(got).astype(np.float64), np.ravel(want).astype(np.float64)
    if g.size != w.size:
        return float("inf")
    norm = float(np.linalg.norm(w))
    diff = float(np.linalg.norm(g - w))
    return diff / norm if norm > 0 else (0.0 if diff == 0 else float("inf"))


def strip_activation_pairs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The QDQ model with every QuantizeLinear -> DequantizeLinear pair on a computed tensor removed (its
    readers read the tensor before the pair): the float model over the same dequantized weights."""
    model = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = model.graph
    constant = {t.name for t in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in graph.node for o in n.output}
    bypass = {}
    for node in graph.node:
        q = producer.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if q is not None and q.op_type == "QuantizeLinear" and q.input[0] not in constant:
            bypass[node.output[0]] = q.input[0]
    outputs = {o.name for o in graph.output}
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in bypass:
                node.input[k] = bypass[name]
    kept = [n for n in graph.node if not (n.op_type == "DequantizeLinear" and n.output[0] in bypass
                                          and n.output[0] not in outputs)]
    for node in kept:
        if node.op_type == "DequantizeLinear" and node.output[0] in bypass:    # a graph output: x, as is
            node.op_type, node.input[:] = "Identity", [bypass[node.output[0]]]
            del node.attribute[:]
            node.domain = ""
    used = {i for n in kept for i in n.input} | outputs
    kept = [n for n in kept if n.op_type != "QuantizeLinear" or any(o in used for o in n.output)]
    del graph.node[:]
    graph.node.extend(kept)
    produced = {o for n in kept for o in n.output}
    infos = [vi for vi in graph.value_info if vi.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    return model


def _classifier(want: np.ndarray) -> bool:
    """One row of scores (batch 1): top-1 means something."""
    shape = [d for d in want.shape if d != 1]
    return len(shape) == 1 and shape[0] > 1


def judge(name: str, backend: str, got: np.ndarray | None, int8_ref: np.ndarray, float_ref: np.ndarray,
          rtol: float = 0.0) -> Int8Distance:
    if got is None:
        return Int8Distance(name, backend, False, error="not computed")
    got = np.asarray(got).reshape(-1)
    ort_gap = rel_rms(int8_ref, float_ref)
    result = Int8Distance(name, backend, False, rel_rms(got, int8_ref), rel_rms(got, float_ref), ort_gap)
    if _classifier(float_ref):
        result.top1_float = bool(np.argmax(got) == np.argmax(float_ref))
        result.top1_int8 = bool(np.argmax(got) == np.argmax(int8_ref))
    # rtol: a model onnxruntime quantizes without loss still leaves float rounding
    result.passed = bool(np.all(np.isfinite(got)) and result.from_float <= max(ort_gap, rtol))
    return result


def check_fast(converted, proto: onnx.ModelProto, feeds: dict, reference: dict, report, backends: list[str],
               rtol: float, float_proto: onnx.ModelProto | None, layer_row: Callable, blobs_of: Callable) -> None:
    """Fill `report` for a fast-mode conversion: per layer and per output, both distances; outputs judged.
    check.py hands over its `layer_row` and `blobs_of(backend, wanted) -> (blobs, error)`, which runs
    the converted model in that backend (check.py imports this module, not the other way round)."""
    floats = onnxruntime_all(strip_activation_pairs(proto), feeds)
    float_outputs = floats
    if float_proto is not None:
        float_outputs = onnxruntime_all(float_proto, {k: v for k, v in feeds.items()
                                                      if k in {i.name for i in float_proto.graph.input}})
    graph = converted.graph
    order = graph.topological()
    for backend in backends:
        wanted = [b for n in order for b in n.outputs if b in reference and n.op != "Input"]
        wanted += [o for o in graph.outputs if o not in wanted]
        blobs, error = blobs_of(backend, wanted)
        for node in order:
            for blob in node.outputs:
                if blob not in blobs or blob not in reference or node.op == "Input":
                    continue
                want = to_ncnn_layout(reference[blob], graph.tensors[blob])
                row = layer_row(backend, node, blob, blobs[blob], want, rtol, 0.0)
                row.passed = True            # fast mode: per-layer figures inform; the outputs decide
                row.from_float = rel_rms(blobs[blob], floats[blob]) if blob in floats else None
                row.from_int8 = rel_rms(blobs[blob], want)
                report.layers.append(row)
        for out in graph.outputs:
            if out not in reference or out not in float_outputs:
                continue
            result = judge(out, backend, blobs.get(out), reference[out], float_outputs[out], rtol)
            if error is not None and out not in blobs:
                result.error = str(error).splitlines()[0]
            report.int8_distance.append(result)
    report.warnings.append("fast int8: activation Q/DQ pairs that feed no int8 layer are dropped, so tensors "
                           "differ from onnxruntime's int8 run; each output passes when it is no farther "
                           "(relative RMS) from the float model than onnxruntime's own int8 run is")
    report.passed = bool(report.int8_distance) and all(d.passed for d in report.int8_distance)

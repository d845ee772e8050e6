"""Check a conversion against onnxruntime, output by output, and name the first layer that diverges.

The model is converted in memory; the same inputs go to onnxruntime (on the
prepared ONNX model, every intermediate tensor exposed) and to the chosen
backend(s): the interpreter (ncnn semantics in numpy) and/or the real ncnn
runtime on the written files. Blobs that carry an ONNX tensor's name are
compared in layer order, so the first mismatch names its layer and ONNX node.
"""
from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from converter.api import ConvertOptions, NcnnModel, convert_with_tail
from converter.interpreter import InterpreterError, run
from converter.interpreter.blas_threads import blas_threads, choose_threads
from converter.ir import ConversionError
from converter.ncnn_side.layout import held_as
from converter.ncnn_side.release_check import ncnn_version, release_warnings
from converter.ncnn_side.release_sizes import NeedsFixedSizes
from converter.ncnn_side.runtime import PRECISIONS, NcnnCrash, NcnnError, available, run_ncnn
from converter.onnx_side.cut import subgraph
from converter.onnx_side.genai_ops import MS_DOMAIN
from converter.onnx_side.loader import prepare_model
from converter.shapes.example_sizes import example_shapes
from converter.shapes.int_inputs import ncnn_dtype, output_dtype
from converter.verification import fp16
from converter.verification.divergence import Divergence
from converter.verification.feeds import make_inputs, ncnn_feed, onnxruntime_all, to_ncnn_layout
from converter.verification.forced_layers import forced_model
from converter.verification.int8_fast import check_fast
from converter.verification.quantization_steps import quantization_steps, within_steps
from converter.verification.tail import tail_checks, whole_model_reference

BACKENDS = ("interp", "ncnn", "both")


@dataclass
class OutputCheck:
    name: str
    backend: str
    passed: bool
    max_abs: float | None = None
    max_rel: float | None = None
    error: str | None = None
    rel_to_max: float | None = None     # max abs error over max|reference|


@dataclass
class LayerRow:
    """One compared blob: a layer's output that carries an ONNX tensor's name, in graph order.

    `rel_to_max` is the max abs error over max|reference| (one figure for the whole blob,
    unlike `max_rel` which divides elementwise); non-finite figures are None in JSON."""
    backend: str
    layer: str
    layer_type: str
    onnx_node: str | None
    blob: str
    shape: list[int]
    passed: bool
    max_abs: float | None = None
    rel_to_max: float | None = None
    cosine: float | None = None
    nan: int = 0
    inf: int = 0
    first_divergence: bool = False
    error: str | None = None
    from_float: float | None = None     # fast int8: relative RMS distances (converter/verification/int8_fast.py)
    from_int8: float | None = None


@dataclass
class VerifyReport:
    passed: bool
    backends: list[str]
    inputs: dict[str, list[int]]
    outputs: list[OutputCheck] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    reshapes_inserted: int = 0
    constants_relaid: int = 0
    broadcasts_left: list[str] | None = None    # --no-broadcast-fix: the elementwise layers it left
    layers: list[LayerRow] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None
    sizes: list[str] = field(default_factory=list)      # dynamic dims verify chose, and why
    warnings: list[str] = field(default_factory=list)   # why a pass may prove little
    # quantized models: layers that run int8, and each quantized node that runs in float, with why
    int8_layers: int | None = None
    int8_fallbacks: dict[str, str] = field(default_factory=dict)
    precision: str = "fp32"                             # or fp16, as devices run (converter/verification/fp16.py)
    end_to_end: list[OutputCheck] = field(default_factory=list)   # quantized: outputs from the inputs alone
    int8_mode: str | None = None        # quantized: and fast mode's dropped pairs, distances (verify_int8.py)
    int8_dropped: dict[str, str] = field(default_factory=dict)
    int8_distance: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def broadcast_stats(self) -> dict:
        return {"reshapes_inserted": self.reshapes_inserted, "constants_relaid": self.constants_relaid,
                **({} if self.broadcasts_left is None else {"broadcasts_left": self.broadcasts_left})}


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float,
            step: float | None = None) -> tuple[bool, float, float, str | None]:
    """`step`: the tensor's quantization step (converter/verification/quantization_steps.py), judged in those."""
    if got.size != want.size:
        return False, float("inf"), float("inf"), f"shape {list(got.shape)} vs expected {list(want.shape)}"
    got = got.reshape(want.shape).astype(np.float64)
    want = want.astype(np.float64)
    # the same inf, or NaN on both sides, is a match: inf - inf would make it a NaN difference
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore"):       # inf - inf and inf / inf where the values differ
        diff = np.where(same, 0.0, np.abs(got - want))
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float((diff / np.maximum(np.abs(want), 1e-12)).max()) if diff.size else 0.0
    finite = np.isfinite(got) & np.isfinite(want)
    ok = bool(np.all(same | (finite & (diff <= atol + rtol * np.abs(np.where(finite, want, 0.0))))))
    if not ok and step and np.all(same | finite):
        ok = within_steps(diff, np.where(finite, want, 0.0), rtol, atol, step)
    return ok, max_abs, max_rel, None


def _finite_or_none(value: float) -> float | None:
    return value if np.isfinite(value) else None


def layer_row(backend: str, node, blob: str, got: np.ndarray, want: np.ndarray,
              rtol: float, atol: float, step: float | None = None) -> LayerRow:
    """The figures a user reads to see where numbers drift, for one blob."""
    ok, max_abs, _, why = compare(got, want, rtol, atol, step)
    row = LayerRow(backend, node.name, node.op, node.origin, blob, list(got.shape), ok,
                   nan=int(np.isnan(got).sum()), inf=int(np.isinf(got).sum()), error=why)
    if why is not None:
        return row
    g = got.reshape(want.shape).astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    peak = float(np.abs(w).max()) if w.size else 0.0
    row.max_abs = _finite_or_none(max_abs)
    if max_abs == 0.0:
        row.rel_to_max = 0.0
    elif peak > 0.0:
        row.rel_to_max = _finite_or_none(max_abs / peak)
    finite = np.isfinite(g) & np.isfinite(w)
    if finite.any():
        g, w = g[finite], w[finite]
        norms = float(np.linalg.norm(g) * np.linalg.norm(w))
        row.cosine = float(g @ w / norms) if norms > 0 else (1.0 if not g.any() and not w.any() else 0.0)
    return row


def _interp_blobs(model: NcnnModel, feeds: dict, precision: str) -> tuple[dict, Exception | None]:
    try:
        blobs = run(model.graph, feeds, keep=True, fp16=precision == "fp16")
        return {k: held_as(v, output_dtype(model.graph, k)) for k, v in blobs.items()}, None
    except InterpreterError as exc:
        return getattr(exc, "blobs", {}), exc


def _ncnn_blobs(model: NcnnModel, feeds: dict, wanted: list[str], precision: str,
                ncnn_python: str | None = None) -> tuple[dict, Exception | None]:
    names = model.names.blob
    with tempfile.TemporaryDirectory() as folder:
        param, bin_ = Path(folder) / "model.param", Path(folder) / "model.bin"
        model.save(param, bin_)
        try:
            # the cores free right now: ncnn's threads wait for each other on a busy machine
            # (YOLOv8n every blob, load 8 on 2 cores: 1.7-2.0 s on 2 threads, 0.8 s on 1)
            result = run_ncnn(param, bin_, {names[k]: v for k, v in feeds.items()}, [names[w] for w in wanted],
                              precision, threads=choose_threads() or 2, python=ncnn_python)
        except (NcnnCrash, NcnnError) as exc:
            return {}, exc
    return {w: held_as(result[names[w]], output_dtype(model.graph, w)) for w in wanted}, None


def _check_backend(backend: str, model: NcnnModel, ncnn_feeds: dict, reference: dict,
                   rtol: float, atol: float, report: VerifyReport, precision: str = "fp32",
                   steps: dict[str, float] | None = None, ncnn_python: str | None = None) -> None:
    graph, steps = model.graph, steps or {}
    order = graph.topological()
    comparable = [b for n in order for b in n.outputs if b in reference and n.op != "Input"]
    comparable += [o for o in graph.outputs if o not in comparable and o in reference]
    if backend == "interp":
        blobs, error = _interp_blobs(model, ncnn_feeds, precision)
    else:
        blobs, error = _ncnn_blobs(model, ncnn_feeds, comparable, precision, ncnn_python)
    failed_layer = None
    if error is not None:
        failed_layer = _layer_named_in(str(error), order)
        layer = failed_layer
        failure = Divergence(backend, layer.name if layer else "?", layer.op if layer else "?",
                             layer.origin if layer else None, None, error=str(error).splitlines()[0])
    for out in graph.outputs:
        if out not in blobs:
            report.outputs.append(OutputCheck(out, backend, False, error="not computed"))
            continue
        ok, max_abs, max_rel, why = compare(blobs[out], to_ncnn_layout(reference[out], graph.tensors[out]),
                                            rtol, atol, steps.get(out))
        peak = float(np.max(np.abs(reference[out]), initial=0.0)) if reference[out].dtype.kind == "f" else 0.0
        rel = max_abs / peak if peak > 0 and np.isfinite(max_abs) else None
        report.outputs.append(OutputCheck(out, backend, ok, max_abs, max_rel, why, rel))
    backend_passed = error is None and all(o.passed for o in report.outputs if o.backend == backend)
    diverged = False
    # one BLAS thread: the cosines' dot products are memory-bound, and two threads on a busy machine
    # wait for each other (YOLOv8n: 6 s of an 8.7 s verify, 1.3 s with one thread)
    with blas_threads(1):
        for node in order:
            if node is failed_layer:
                break
            for blob in node.outputs:
                if blob not in blobs or blob not in reference or node.op == "Input":
                    continue
                want = to_ncnn_layout(reference[blob], graph.tensors[blob])
                row = layer_row(backend, node, blob, blobs[blob], want, rtol, atol, steps.get(blob))
                # quantized (layers fed onnxruntime's inputs): a layer beyond its steps is wrong whatever the
                # outputs; a blob the real ncnn hands back in another shape decides only through them
                decisive = not backend_passed or (steps and row.error is None)
                if not row.passed and not diverged and decisive:
                    diverged = row.first_divergence = True
                    _, max_abs, max_rel, why = compare(blobs[blob], want, rtol, atol, steps.get(blob))
                    report.divergences.append(Divergence(backend, node.name, node.op, node.origin, blob,
                                                         max_abs, max_rel, why))
                report.layers.append(row)
    if failed_layer is not None:
        report.layers.append(LayerRow(backend, failed_layer.name, failed_layer.op, failed_layer.origin,
                                      failed_layer.outputs[0] if failed_layer.outputs else "", [], False,
                                      first_divergence=not diverged, error=failure.error))
    if error is not None and not diverged:
        report.divergences.append(failure)


def nearly_constant(name: str, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """A warning when the reference output spans less than ten tolerance widths: nearly any
    conversion passes on such inputs (a detector fed noise outputs ~1e-6 everywhere)."""
    values = np.asarray(want, np.float64)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return None
    spread = float(values.max() - values.min())
    width = atol + rtol * float(np.abs(values).max())
    if spread > 10 * width:
        return None
    return (f"output '{name}' is nearly constant for these inputs (all values within {spread:.3g}, "
            f"under 10x the tolerance {width:.3g}): the check proves little; feed real data, e.g. "
            f"--input NAME=photo.png:size=WxH,mean=...,std=... or --input NAME=FILE.npy")


def _layer_named_in(message: str, order) -> object | None:
    return next((n for n in order if f"'{n.name}'" in message), None)


def verify(model, inputs: dict[str, np.ndarray] | None = None,
           input_shapes: dict[str, list[int]] | None = None, seed: int = 0,
           rtol: float = 1e-3, atol: float = 1e-4, backend: str = "interp",
           broadcast_fix: bool = True, progress: Callable[[str], None] | None = None,
           input_values: dict[str, object] | None = None, layout: str = "onnx",
           precision: str = "fp32", int8: str = "exact", float_model=None, target_ncnn: int | None = None,
           ncnn_python: str | None = None, outputs: list[str] | None = None, host_tail: bool = False,
           block_quant: str = "int8", nchw_inputs: list[str] | None = None) -> VerifyReport:
    """`progress(stage)` is told each stage as it starts (the CLI shows slow ones); `input_values`
    fixes inputs to constants, as convert does; `inputs` are ONNX-shaped, or ncnn Mats with
    layout='ncnn'; precision='fp16' checks what devices run by default (converter/verification/fp16.py);
    `nchw_inputs` as convert's: onnxruntime is still fed the ONNX layout, ncnn the channels-first one."""
    if isinstance(model, NcnnModel):
        raise TypeError("verify takes the ONNX model (a path or ModelProto) and converts it itself, "
                        "not a converted NcnnModel")
    if backend not in BACKENDS:
        raise ConversionError(f"unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}")
    if precision not in PRECISIONS:
        raise ConversionError(f"unknown precision '{precision}'; choose one of {', '.join(PRECISIONS)}")
    if ncnn_python is not None:       # the ncnn another Python imports (converter/ncnn_side/child.py)
        ncnn_python_version = ncnn_version(ncnn_python)
    elif backend != "interp":
        if not available():     # an optional dependency the user has not installed, not a bug of ours
            raise ConversionError(f"--backend {backend} needs the real ncnn runtime, which is not "
                                  f"installed: pip install ncnn (or use --backend interp)")
    progress = progress or (lambda stage: None)
    progress("converting")
    # prepared once (fixed values become initializers), the same proto converted and run by onnxruntime
    checker_warnings: list[str] = []
    proto = prepare_model(model, input_shapes, checker_warnings, input_values)
    options = ConvertOptions(broadcast_fix, None, None, int8, False, target_ncnn, block_quant, nchw_inputs)
    try:
        converted = convert_with_tail(subgraph(proto, outputs) if outputs else proto, checker_warnings, host_tail,
                                      options)
    except NeedsFixedSizes as fixed:    # a release without shape expressions: checked at fixed sizes
        proto = prepare_model(model, fixed.shapes(input_shapes), checker_warnings, input_values)
        converted = fixed.noted(convert_with_tail(subgraph(proto, outputs) if outputs else proto, checker_warnings,
                                                  host_tail, options))
    shapes, size_notes = example_shapes(proto, converted.graph)
    feeds = make_inputs(proto, converted.graph, inputs or {}, seed, converted.io() if layout == "ncnn" else None,
                        shapes)
    progress("running onnxruntime")
    steps = quantization_steps(proto)
    reference_proto = proto
    if any(n.domain == MS_DOMAIN and n.op_type == "GroupQueryAttention" for n in proto.graph.node):
        # onnxruntime needs the sequence lengths the conversion detached, and they say past + new only
        # for a mask of ones (batch 1), what onnxruntime-genai feeds and the files assume
        reference_proto = prepare_model(model, input_shapes, [], input_values, detach=False)
        if "attention_mask" in feeds and "attention_mask" not in (inputs or {}):
            feeds["attention_mask"] = np.ones_like(feeds["attention_mask"])
    reference = onnxruntime_all(reference_proto, feeds, quantized=bool(steps))
    for blob, (source, low, high) in converted.graph.reference_clips.items():
        if source in reference:          # judged as the tensor it clips: its values and its steps
            reference[blob] = np.clip(reference[source], low, high)
            steps.update({blob: steps[source]} if source in steps else {})
    ncnn_feeds = {name: ncnn_feed(feeds[name], converted.graph.tensors[name], ncnn_dtype(converted.graph, name))
                  for name in converted.graph.inputs}
    backends = ["interp", "ncnn"] if backend == "both" else [backend]
    report = VerifyReport(False, backends, {k: list(v.shape) for k, v in feeds.items()},
                          reshapes_inserted=converted.stats.get("reshapes_inserted", 0),
                          constants_relaid=converted.stats.get("constants_relaid", 0), rtol=rtol, atol=atol,
                          broadcasts_left=converted.stats.get("broadcasts_left"),
                          sizes=[n for n in size_notes if n.split(" ")[0] not in (inputs or {})],
                          int8_layers=converted.stats.get("int8_layers"),
                          int8_fallbacks=converted.stats.get("int8_fallbacks", {}), int8_mode=int8 if steps else None,
                          int8_dropped=converted.stats.get("int8_dropped", {}))
    report.warnings = [w for out in converted.graph.outputs if out in reference
                       for w in [nearly_constant(out, reference[out], rtol, atol)] if w]
    report.warnings += release_warnings(converted, ncnn_python, ncnn_python_version if ncnn_python else None)
    if steps and int8 == "fast":     # distances from onnxruntime's int8 and float runs (converter/verification/int8_fast.py)
        float_proto = float_model and prepare_model(float_model, input_shapes, [], input_values)
        def blobs_of(backend: str, wanted: list[str]) -> tuple[dict, Exception | None]:
            return _interp_blobs(converted, ncnn_feeds, "fp32") if backend == "interp" else \
                _ncnn_blobs(converted, ncnn_feeds, wanted, "fp32")
        check_fast(converted, proto, feeds, reference, report, backends, rtol, float_proto, layer_row, blobs_of)
        return report
    checked, checked_feeds = converted, ncnn_feeds
    if steps:        # quantized: each layer on onnxruntime's inputs, in steps (converter/verification/forced_layers.py)
        checked, refs = forced_model(converted, reference)
        checked_feeds = {**ncnn_feeds, **{r: ncnn_feed(reference[b], converted.graph.tensors[b]) for r, b in refs.items()}}
        report.warnings.append("quantized model: each layer is checked on onnxruntime's values of its inputs, "
                               "within one step of its quantizer; end to end (end_to_end) steps add up")
    for b in backends:
        progress("running the interpreter" if b == "interp" else "running the real ncnn")
        _check_backend(b, checked, checked_feeds, reference, rtol, atol, report, precision, steps, ncnn_python)
        if steps:
            whole = VerifyReport(False, [], {})
            _check_backend(b, converted, ncnn_feeds, reference, rtol, atol, whole, precision, steps, ncnn_python)
            report.end_to_end += whole.outputs
    if converted.tail is not None:       # ncnn then the host tail: the whole model's outputs
        whole, entries = whole_model_reference(proto, feeds), converted.io()["outputs"]
        for b in backends:
            blobs, error = _interp_blobs(converted, ncnn_feeds, precision) if b == "interp" else \
                _ncnn_blobs(converted, ncnn_feeds, [e["onnx"] for e in entries], precision)
            report.outputs += [OutputCheck(**c) for c in tail_checks(
                converted.tail, entries, whole, feeds, b, blobs, error, rtol, atol, compare, report.warnings)]
    report.passed = bool(report.outputs) and all(o.passed for o in report.outputs) and not report.divergences
    report.precision = precision
    if precision == "fp16":         # fp32's tolerance does not fit: re-judged by fp16's
        fp16.judge(report, converted.graph, reference)
    return report

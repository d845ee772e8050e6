"""fp16, the precision ncnn runs in on devices by default: verify's verdict and warnings for it,
and the warnings `convert --fp16` gives about weights fp16 cannot hold.

verify --precision fp16 runs the real ncnn with use_fp16_storage/arithmetic/packed on and the
interpreter emulating fp16 storage (converter/interpreter/fp16_storage.py). Each blob is then
judged against onnxruntime's fp32 by its max error over max|reference|, within
2 * FP16_EPS * depth: two fp16 roundings (unit roundoff 2**-11), of a layer's weights or
inputs and of its output, per layer on the longest chain of layers that computes the blob.
Measured on YOLOv8n (320x320, random input): the worst blob uses 0.48 of it (its first
Convolution); one rounding per layer (2**-11 x depth) would leave it no margin.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass

import numpy as np

from converter.ir import Graph
from converter.ncnn_side.layers import SPECS
from converter.verification.divergence import Divergence

FP16_MAX = 65504.0          # the largest finite float16; larger magnitudes become inf
FP16_EPS = 2.0 ** -11       # float16's unit roundoff (10 fraction bits)
FP16_NORMAL = 2.0 ** -14    # the smallest normal float16; below it precision falls off
LOSS = 1e-2                 # a layer losing more than this (of max|ref|) is named
SUBNORMAL_SHARE = 0.01      # a weight buffer with more subnormals than this is named
ADVICE = ("run this model with fp16 off (net.opt.use_fp16_storage = use_fp16_arithmetic = "
          "use_fp16_packed = False), or rescale the weights or inputs that feed it")
NAMED = 5                   # layers named per warning; the rest are counted


def depths(graph: Graph) -> dict[str, int]:
    """Each blob's depth: the layers on the longest chain from an input that computes it."""
    depth: dict[str, int] = {}
    for node in graph.topological():
        here = 0 if node.op == "Input" else 1 + max((depth.get(b, 0) for b in node.inputs), default=0)
        for blob in node.outputs:
            depth[blob] = here
    return depth


def tolerance(depth: int) -> float:
    return 2 * FP16_EPS * max(depth, 1)


@dataclass
class Fp16Divergence(Divergence):
    """The first blob past fp16's tolerance; max_rel holds its max error over max|reference|."""
    tolerance: float | None = None

    def describe(self) -> str:
        if self.error:
            return (f"{self.backend}: {self.layer_type} layer '{self.layer}' (ONNX node '{self.onnx_node}'), "
                    f"blob '{self.blob}': {self.error}")
        of_max = "-" if self.max_rel is None else f"{self.max_rel:.3g}"
        abs_error = "-" if self.max_abs is None else f"{self.max_abs:.3g}"
        return (f"{self.backend}: first divergence in fp16 at {self.layer_type} layer '{self.layer}' "
                f"(ONNX node '{self.onnx_node}'), blob '{self.blob}': max abs error {abs_error}, "
                f"{of_max} of max|ref| (fp16 tolerance {self.tolerance:.3g})")


def _within(rel_to_max: float | None, max_abs: float | None, tol: float) -> bool:
    if rel_to_max is None:          # non-finite error, or a zero reference
        return max_abs == 0.0
    return rel_to_max <= tol


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return ", ".join(names[:NAMED]) + more


def _layer(row) -> str:
    return f"{row.layer_type} '{row.layer}' (ONNX node '{row.onnx_node}')"


def judge(report, graph: Graph, reference: dict[str, np.ndarray]) -> None:
    """Re-judge verify's rows and outputs by fp16's tolerance, and warn about the layers fp16
    cannot hold: values over 65504 in onnxruntime's fp32, or more than LOSS of max|ref| lost."""
    depth = depths(graph)
    for o in report.outputs:
        o.passed = o.error is None and _within(o.rel_to_max, o.max_abs, tolerance(depth.get(o.name, 1)))
    failures = {d.backend: d for d in report.divergences if d.error}     # a layer that failed outright
    report.divergences = []
    for backend in report.backends:
        backend_passed = backend not in failures and all(o.passed for o in report.outputs if o.backend == backend)
        diverged = False
        for row in (r for r in report.layers if r.backend == backend):
            tol = tolerance(depth.get(row.blob, 1))
            row.passed = row.error is None and _within(row.rel_to_max, row.max_abs, tol)
            row.first_divergence = not row.passed and not diverged and not backend_passed
            if row.first_divergence:
                failed_here = backend in failures and failures[backend].layer == row.layer
                report.divergences.append(failures[backend] if failed_here else Fp16Divergence(
                    backend, row.layer, row.layer_type, row.onnx_node, row.blob, row.max_abs, row.rel_to_max,
                    row.error, tol))
            diverged = diverged or row.first_divergence
        if backend in failures and not diverged:      # failed before any row could be compared
            report.divergences.append(failures[backend])
    deepest = max((depth.get(o, 1) for o in graph.outputs), default=1)
    report.rtol, report.atol = tolerance(deepest), 0.0
    report.warnings += precision_notes(report, graph, reference)
    report.passed = bool(report.outputs) and all(o.passed for o in report.outputs) and not report.divergences


def precision_notes(report, graph: Graph, reference: dict[str, np.ndarray]) -> list[str]:
    notes = [f"fp16 tolerance: max error <= 2 x 2**-11 x depth of max|ref| per blob (depth: layers on the "
             f"longest chain computing it; {report.rtol:.3g} at the deepest output); the interpreter "
             f"emulates fp16 storage of blobs and tagged weights, not fp16 arithmetic inside a layer"]
    if "ncnn" in report.backends and platform.machine().lower() not in ("aarch64", "arm64", "armv7l", "riscv64"):
        notes.append(f"the real ncnn on this {platform.machine()} host keeps blobs in fp32 even with "
                     f"use_fp16_storage on (ncnn stores blobs in fp16 only on ARM and RISC-V CPUs; on x86 "
                     f"only InnerProduct keeps its weights in fp16): its figures understate a device's fp16 "
                     f"error; the interpreter's (--backend interp or both) emulate it")
    seen, over = set(), []
    for node in graph.topological():
        for blob in node.outputs:
            want = reference.get(blob)
            if want is None or node.op == "Input" or want.dtype.kind != "f" or node.name in seen:
                continue
            peak = float(np.max(np.abs(np.where(np.isfinite(want), want, 0)), initial=0.0))
            if peak > FP16_MAX:
                seen.add(node.name)
                over.append(f"{node.op} '{node.name}' (ONNX node '{node.origin}', max |x| {peak:.3g})")
    if over:
        notes.append(f"fp16 overflow: {len(over)} layer(s) compute values over 65504, which fp16 stores "
                     f"as inf: {_listed(over)}; {ADVICE}")
    for backend in report.backends:
        lossy = [_layer(r) + f" {r.rel_to_max:.3g}" if r.rel_to_max is not None else _layer(r) + " inf/NaN"
                 for r in report.layers if r.backend == backend and r.error is None
                 and (r.rel_to_max is None or r.rel_to_max > LOSS) and not (r.max_abs == 0.0)]
        if lossy:
            notes.append(f"fp16 precision loss ({backend}): {len(lossy)} layer(s) off by more than {LOSS:g} "
                         f"of max|ref|: {_listed(lossy)}; {ADVICE}")
    return notes


def weight_warnings(graph: Graph) -> list[str]:
    """One line per weight buffer `convert --fp16` writes that fp16 cannot hold: values over
    65504 (become inf), nonzero values that round to zero, or many subnormals (few digits left)."""
    lines = []
    for node in graph.topological():
        spec = SPECS.get(node.op)
        if spec is None or not node.weights:
            continue
        params = spec.resolve(node.params)
        for w_spec, data in zip(spec.weight_layout(node.params), node.weights):
            if not w_spec.tagged(params):
                continue            # written as fp32 even with --fp16
            values = np.asarray(data, np.float32).ravel()
            with np.errstate(over="ignore"):
                half = values.astype(np.float16)
            where = f"{node.op} layer '{node.name}' (ONNX node '{node.origin}') weight {w_spec.name}"
            overflow = int(np.sum(np.isfinite(values) & np.isinf(half)))
            flushed = int(np.sum((values != 0) & (half == 0)))
            subnormal = int(np.sum((half != 0) & (np.abs(half) < FP16_NORMAL)))
            if overflow:
                lines.append(f"--fp16: {where}: {overflow} value(s) over 65504 become inf "
                             f"(max |w| {float(np.max(np.abs(values))):.3g}); convert without --fp16")
            if flushed:
                lines.append(f"--fp16: {where}: {flushed} nonzero value(s) under 2**-25 round to 0; "
                             f"convert without --fp16")
            if values.size and subnormal > SUBNORMAL_SHARE * values.size:
                lines.append(f"--fp16: {where}: {subnormal} of {values.size} value(s) are fp16 subnormals "
                             f"(under 2**-14, fewer than 11 significant bits); convert without --fp16")
    return lines

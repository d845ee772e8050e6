"""onnx's backend node test cases through `convert` and the real ncnn runtime.

    python scripts/node_suite.py [--workers N] [--only SUBSTRING] [-v]

Every case of `onnx.backend.test.case.node` in scope is converted with the Python API and run
on its own first data set in the real ncnn runtime and in the interpreter. Scope: models of
the default domain (single nodes, and the `*_expanded` function bodies of several nodes)
whose inputs and outputs are tensors of float32, integer or bool type, with at least one
float32 input (the data ncnn computes on). Out of scope, with the reason recorded: sequence /
optional / map types, strings, float16 / double / bfloat16 / float8 / int4 / complex data
(ncnn computes in float32), ops of other domains (training, ai.onnx.ml, preview), models
with integer or bool inputs only.

Each case is converted up to twice: (a) float32 inputs fed at run time, integer and bool
inputs fixed as constants (`input_values`: they are shapes, axes, indices); (b) when (a)
is refused and there are several float inputs, only the first fed, the others fixed (ncnn
layers hold their weights, sizes and scales). Every conversion that succeeds is judged.

Outcomes: pass; refused (ConversionError: the one-line refusal); wrong (real ncnn differs
from the expected outputs); warned (differs, but the conversion warned that it would);
interp (the interpreter differs from real ncnn); crash (the child died); error (any
other exception: a bug). Tolerance: |got - want| <= atol + rtol |want| with the project's
rtol 1e-3, atol 1e-4, or the case's own rtol/atol where those are looser; NaNs must be at
the same places; interpreter vs real ncnn: rtol 1e-4, atol 1e-5 (both float32 kernels).

Cases run in `--workers` child processes (one long-lived child converts and runs many
cases; a child that dies or hangs is replaced and its case counted as a crash).
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RTOL, ATOL = 1e-3, 1e-4                  # the project's rule (tests/onnx_cases.py)
INTERP_RTOL, INTERP_ATOL = 1e-4, 1e-5
INTEGER_TYPES = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                 TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL}
OUTCOMES = ("pass", "refused", "wrong", "warned", "interp", "crash", "error")
BAD = ("wrong", "interp", "crash", "error")
CASE_TIMEOUT = 120.0                     # seconds one case may take in a loaded machine's child


@dataclass
class Case:
    """What a child needs of one node case (picklable: the model as bytes)."""
    name: str
    model: bytes
    inputs: dict[str, np.ndarray]
    outputs: list[np.ndarray]
    rtol: float
    atol: float


@dataclass
class Result:
    name: str
    outcome: str
    detail: str = ""


# ---- scope ----------------------------------------------------------------------------

def out_of_scope(model: onnx.ModelProto) -> str | None:
    """Why a node case is outside the suite, or None."""
    graph = model.graph
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            return f"domain {node.domain} (training, ml or preview ops)"
    types = []
    for vi in list(graph.input) + list(graph.output):
        if not vi.type.HasField("tensor_type"):
            return f"{vi.type.WhichOneof('value')} type (sequence, optional or map)"
        types.append(vi.type.tensor_type.elem_type)
    if any(t != TensorProto.FLOAT and t not in INTEGER_TYPES for t in types):
        return "data other than float32, integers and bool (ncnn computes in float32)"
    if not any(vi.type.tensor_type.elem_type == TensorProto.FLOAT for vi in graph.input):
        return "no float32 input for ncnn to compute on"
    return None


# builders whose expected output onnx's pure-Python pooling reference takes ~10-35 s each to compute
# (a 32x32x32 volume, 3 of the collection's ~45 s); the other 3-D pooling cases stay in
SLOW_BUILDERS = {"export_averagepool_3d_default": "test_averagepool_3d_default",
                 "export_lppool_3d_default": "test_lppool_3d_default",
                 "export_maxpool_3d_default": "test_maxpool_3d_default"}


def collect(only: str | None = None) -> tuple[list[Case], dict[str, str]]:
    """The in-scope cases, and the out-of-scope ones' reasons by name."""
    from onnx.backend.test.case import base
    import onnx.backend.test.case.node as node_cases
    builds = base._Exporter.__init__

    def without_slow_builders(cls, name, bases, dct):   # a class's builders run as it is made
        builds(cls, name, bases, {k: v for k, v in dct.items() if k not in SLOW_BUILDERS})
    base._Exporter.__init__ = without_slow_builders
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")            # the case builders' own overflow warnings
            every = node_cases.collect_testcases(None)
    finally:
        base._Exporter.__init__ = builds
    cases, skipped = [], {name: "its expected output takes onnx's reference ~10-35 s (SLOW_BUILDERS)"
                          for name in SLOW_BUILDERS.values()}
    for c in every:
        if only and only not in c.name:
            continue
        why = out_of_scope(c.model)
        if why:
            skipped[c.name] = why
            continue
        feeds, expected = c.data_sets[0]
        names = [i.name for i in c.model.graph.input]
        # a few builders give an expected output as a TensorProto (int16 from QuantizeLinear's output_dtype)
        expected = [onnx.numpy_helper.to_array(e) if isinstance(e, onnx.TensorProto) else e for e in expected]
        cases.append(Case(c.name, c.model.SerializeToString(), dict(zip(names, feeds)), expected,
                          c.rtol, c.atol))
    return cases, skipped


# ---- one case, in a child -----------------------------------------------------------------

def attempts(model: onnx.ModelProto, feeds: dict) -> list[dict]:
    """Convert arguments to try, in order: (a) floats live, (b) only the first float live."""
    floats = [i.name for i in model.graph.input if i.type.tensor_type.elem_type == TensorProto.FLOAT]
    tried = []
    for live in (floats, floats[:1]):
        if tried and live == floats:
            break
        tried.append({"input_shapes": {k: list(feeds[k].shape) for k in live},
                      "input_values": {k: v for k, v in feeds.items() if k not in live}})
    return tried


def run_case(case: Case, folder: Path) -> Result:
    from converter import convert
    from converter.ir import ConversionError
    model = onnx.load_from_string(case.model)
    refusal = None
    for args in attempts(model, case.inputs):
        try:
            converted = convert(model, **args)
        except ConversionError as exc:
            refusal = refusal or " ".join(str(exc).split())
            continue
        return judge(case, converted, folder)
    return Result(case.name, "refused", refusal)


def judge(case: Case, converted, folder: Path) -> Result:
    from converter.interpreter import InterpreterError
    from converter.ncnn_side.runtime import _run_in_process
    from converter.ncnn_side.layout import to_ncnn
    param, bin_ = folder / "m.ncnn.param", folder / "m.ncnn.bin"
    converted.save(param, bin_)
    io = converted.io()
    feeds = {e["ncnn"]: to_ncnn(case.inputs[e["onnx"]], e) for e in io["inputs"]}
    names = [e["ncnn"] for e in io["outputs"]]
    real = _run_in_process(str(param), str(bin_), feeds, names, 1)
    try:
        ours = converted.run(feeds, names, layout="ncnn")
    except InterpreterError as exc:         # it refuses what ncnn computes wrong (pow of bases <= 0)
        ours, notes = None, [f"interpreter refused: {' '.join(str(exc).split())}"]
    else:
        notes = []
    # a conversion announces a difference by a warning, or by marking the nodes it runs approximately
    # (dynamic quantization's emulation: convert's "approximate:" line)
    approximate = converted.stats.get("int8_fallbacks", {}) if converted.stats.get("approximate_nodes") else {}
    warned = converted.stats.get("warnings", []) + [f"{node}: {why}" for node, why in approximate.items()]
    for entry, want in zip(io["outputs"], case.outputs):
        got = real[entry["ncnn"]]
        why = differs(got, want, max(RTOL, case.rtol), max(ATOL, case.atol))
        if why:
            return Result(case.name, "warned" if warned else "wrong", "; ".join([f"{entry['onnx']}: {why}", *warned]))
        why = ours is not None and differs(ours[entry["ncnn"]], got.reshape(want.shape), INTERP_RTOL, INTERP_ATOL)
        if why:
            return Result(case.name, "interp", f"{entry['onnx']}: interpreter vs ncnn {why}")
    return Result(case.name, "pass", "; ".join(warned + notes))


def differs(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    want = np.asarray(want)
    got = np.asarray(got)
    if got.size != want.size:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    got = got.reshape(want.shape).astype(np.float64)
    want = want.astype(np.float64)
    nan = np.isnan(want)
    if not np.array_equal(nan, np.isnan(got)):
        return "NaNs at other places"
    with np.errstate(all="ignore"):
        same = (got == want) | nan | (np.abs(got - want) <= atol + rtol * np.abs(want))
    if same.all():
        return None
    err = np.where(same, 0, np.abs(got - want))
    return f"max abs error {float(np.nanmax(err)):.3g}"


def _serve(conn) -> None:
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    with tempfile.TemporaryDirectory(prefix="node_suite_") as tmp:
        while True:
            try:
                case = conn.recv()
            except EOFError:
                return
            try:
                result = run_case(case, Path(tmp))
            except Exception as exc:           # a bug of ours: reported, the child carries on
                result = Result(case.name, "error", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            try:
                conn.send(result)
            except OSError:                    # the parent gave up on this child
                return


# ---- the parent ---------------------------------------------------------------------------

class Child:
    def __init__(self, ctx):
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(theirs,), daemon=True)
        self.proc.start()
        theirs.close()
        self.case: Case | None = None
        self.since = 0.0

    def give(self, case: Case) -> None:
        self.case, self.since = case, time.monotonic()
        self.conn.send(case)

    def close(self) -> None:
        self.conn.close()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


def _reply(child: Child) -> Result:
    try:
        return child.conn.recv()
    except (EOFError, OSError):         # the child died (a reset pipe included)
        child.proc.join(5)
        return Result(child.case.name, "crash", f"exit code {child.proc.exitcode}")


def run_suite(cases: list[Case], workers: int | None = None, case_timeout: float = CASE_TIMEOUT) -> list[Result]:
    """Every case through its children; results in the cases' order. A child that dies or takes
    longer than `case_timeout` on one case is replaced; that case is a crash."""
    from multiprocessing.connection import wait
    ctx = mp.get_context("spawn")          # a clean interpreter: the caller may hold threads
    todo = list(reversed(cases))
    children = [Child(ctx) for _ in range(max(1, min(workers or os.cpu_count() or 1, len(cases))))]
    results = {}
    try:
        for child in children:
            if todo:
                child.give(todo.pop())
        while any(c.case is not None for c in children):
            busy = {c.conn: c for c in children if c.case is not None}
            ready = wait(list(busy), timeout=1.0)
            now = time.monotonic()
            for child in busy.values():
                if child.conn in ready:
                    result = _reply(child)
                elif now - child.since > case_timeout:
                    result = Result(child.case.name, "crash", f"no answer in {case_timeout:g} s")
                else:
                    continue
                results[result.name] = result
                if result.outcome == "crash":
                    child.proc.kill()
                    child.close()
                    children[children.index(child)] = child = Child(ctx)
                child.case = None
                if todo:
                    child.give(todo.pop())
    finally:
        for child in children:
            child.close()
    return [results[c.name] for c in cases]


def summary(results: list[Result], skipped: dict[str, str]) -> str:
    counts = collections.Counter(r.outcome for r in results)
    unsupported = sum(r.outcome == "refused" and r.detail.startswith("unsupported ONNX ops") for r in results)
    return (f"{len(results)} in scope: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)
            + f" ({unsupported} of the refusals are ops the converter does not lower at all)"
            + f"; {len(skipped)} out of scope")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--only", help="cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, refusals too")
    args = parser.parse_args(argv)
    start = time.monotonic()
    cases, skipped = collect(args.only)
    results = run_suite(cases, args.workers)
    for r in results:
        if args.verbose or r.outcome in BAD or r.outcome == "warned":
            print(f"{r.outcome:8} {r.name}: {r.detail}")
    if args.verbose:
        for why, n in collections.Counter(skipped.values()).most_common():
            print(f"out of scope ({n}): {why}")
    print(summary(results, skipped) + f" ({time.monotonic() - start:.0f} s)")
    return 1 if any(r.outcome in BAD for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

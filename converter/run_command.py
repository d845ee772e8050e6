"""`onnx2ncnn run`: feed files to .param/.bin in the interpreter or the real ncnn runtime, save the
outputs, and time the files a user ships (--time: warm-up runs, then timed loops; min, median and
max, as ncnn's benchncnn prints them)."""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from converter.ncnn_side.layout import held_as, to_ncnn, to_onnx
from converter.ncnn_side.runtime import NcnnCrash, NcnnError, NcnnRunner, NcnnUnavailable, run_ncnn

from .api import NcnnModel
from .ir import ConversionError


def check_output_path(path: str | None) -> Path | None:
    """Before running: the .npz goes where the user said, into a folder that exists."""
    if path is None:
        return None
    out = Path(path)
    if out.suffix != ".npz":
        raise ConversionError(f"-o {path}: the outputs are saved as a .npz archive; name it OUT.npz")
    if not out.parent.is_dir():
        raise ConversionError(f"-o {path}: folder {out.parent} does not exist")
    if out.is_dir():
        raise ConversionError(f"-o {path}: is a folder, not a file")
    return out


def check_input_names(model: NcnnModel, feeds: dict) -> None:
    """Unknown input names listed with the model's inputs, before an image is decoded for one."""
    entries = model.io()["inputs"]
    names = {n for e in entries for n in (e["onnx"], e["ncnn"])}
    unknown = [k for k in feeds if k not in names]
    if unknown:
        raise ConversionError(f"--input names unknown input(s) {', '.join(unknown)}; the model's inputs are "
                              f"{', '.join(e['onnx'] for e in entries) or 'none'}")


def run_real_ncnn(model: NcnnModel, param, bin_, feeds: dict, layout: str, threads: int) -> dict:
    """The files in the real runtime (a child process), fed and read through the io record."""
    io = model.io()
    entries = {n: e for e in io["inputs"] for n in (e["onnx"], e["ncnn"])}
    blobs = {entries[k]["ncnn"]: to_ncnn(v, entries[k], layout) for k, v in feeds.items()}
    outputs = io["outputs"] or [{"onnx": b, "ncnn": b, "dtype": None} for b in _last_blobs(model)]
    try:
        result = run_ncnn(param, bin_, blobs, [e["ncnn"] for e in outputs], threads=threads)
    except NcnnUnavailable as exc:
        raise ConversionError(f"--backend ncnn: {exc} (or use --backend interp)") from None
    except (NcnnCrash, NcnnError) as exc:
        raise ConversionError(f"the real ncnn: {exc}") from None
    if layout == "ncnn":
        return {e["ncnn"]: held_as(result[e["ncnn"]], e.get("dtype")) for e in outputs}
    return {e["onnx"]: to_onnx(result[e["ncnn"]], e) for e in outputs}


def _last_blobs(model: NcnnModel) -> list[str]:
    """Files without a record: the blobs no layer reads (ncnn's outputs)."""
    names = model.names.blob
    return [names[t] for t in model.graph.outputs]


def time_runs(run, warmup: int, loops: int) -> dict:
    """`warmup` untimed runs, then `loops` timed ones (milliseconds, wall clock)."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(loops):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return {"min": min(times), "median": statistics.median(times), "max": max(times), "loops": loops}


def timing_line(backend: str, threads: int, timing: dict) -> str:
    return (f"{backend} ({threads} thread{'s' if threads != 1 else ''}): min {timing['min']:.3f} ms, "
            f"median {timing['median']:.3f} ms, max {timing['max']:.3f} ms over {timing['loops']} runs")


def save_outputs(path: Path, outputs: dict) -> None:
    np.savez(path, **outputs)


def time_real_ncnn(model: NcnnModel, param, bin_, feeds: dict, layout: str, threads: int,
                   warmup: int, loops: int) -> dict:
    """The real runtime timed in its child: the net loaded once, extractions timed."""
    io = model.io()
    entries = {n: e for e in io["inputs"] for n in (e["onnx"], e["ncnn"])}
    blobs = {entries[k]["ncnn"]: to_ncnn(v, entries[k], layout) for k, v in feeds.items()}
    outputs = [e["ncnn"] for e in io["outputs"]] or _last_blobs(model)
    try:
        runner = NcnnRunner(threads)
    except NcnnUnavailable as exc:
        raise ConversionError(f"--backend ncnn: {exc} (or use --backend interp)") from None
    try:
        times = runner.time(param, bin_, blobs, outputs, threads, warmup, loops)
    except (NcnnCrash, NcnnError) as exc:
        raise ConversionError(f"the real ncnn: {exc}") from None
    finally:
        runner.close()
    return {"min": min(times), "median": statistics.median(times), "max": max(times), "loops": loops}


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expects a whole number >= 1, got '{text}'")
    return int(text)


def add_run_options(run) -> None:
    """run's options beyond the files and inputs (the CLI's parser calls this)."""
    run.add_argument("--backend", choices=["interp", "ncnn"], default="interp", help="interp: the numpy "
                     "interpreter with ncnn's semantics; ncnn: the real runtime (pip install ncnn), fp32, in a "
                     "child process (default: interp)")
    run.add_argument("--threads", type=positive, metavar="N", help="threads: ncnn's num_threads, the "
                     "interpreter's BLAS threads (default: 2 for ncnn; the free cores for the interpreter)")
    run.add_argument("--time", type=positive, nargs="?", const=10, metavar="LOOPS", help="time the files: "
                     "--warmup untimed runs, then LOOPS timed ones (default 10), printing min/median/max ms "
                     "as ncnn's benchncnn does")
    run.add_argument("--warmup", type=positive, default=3, metavar="N", help="untimed runs before --time's "
                     "loops (default: 3)")

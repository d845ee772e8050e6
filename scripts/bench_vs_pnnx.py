"""Speed of our ncnn files against pnnx's for the same ONNX models, both run in the real ncnn runtime.

Usage: python scripts/bench_vs_pnnx.py [--repeat N] [--threads 1,2] [--defaults] [--keep DIR] [--profile]
       [--against-skip PASS,...] [MODEL ...]
(default: the bundled transformer models, YOLOv8n and PP-OCRv4 det from the model cache, and every
models/zoo/*.onnx; a MODEL is a path or a name from scripts/fetch_models.py)

Each model is converted by us and by pnnx (the binary from its wheel, run on the .onnx with the
same input shapes), then both files run on the same inputs in alternating rounds (fp32: fp16/bf16
off; `--defaults` adds a row with ncnn's default options) at each thread count. Prints the median
time ratio ours/pnnx, the largest output difference between the two files, and both files'
layer-type counts. `--keep DIR` keeps both files of each model as DIR/<stem>.ours.param/.bin and
DIR/<stem>.pnnx.param/.bin, to compare their layers; `--profile` prints each file's time per layer
type (scripts/layer_profile.py; pnnx's for one item). `--against-skip fuse_attention` times our file
against our own conversion without those passes instead of pnnx's (what a fusion gains, measured in
the same rounds; "pnnx" in the printout then names that file). The machine is shared and noisy: read
the ratios, never assert them.
"""
from __future__ import annotations

import argparse
import collections
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter import convert  # noqa: E402
from converter.shapes.int_inputs import ncnn_dtype  # noqa: E402
from converter.onnx_side.loader import prepare_model  # noqa: E402
from converter.verification.feeds import make_inputs, ncnn_feed  # noqa: E402

BUNDLED = ["models/vit_tiny.onnx", "models/bert_tiny.onnx", "models/transformer_small.onnx"]
REAL = {"yolov8n_320": {"images": [1, 3, 320, 320]}, "ppocrv4_det": {"x": [1, 3, 640, 640]}}
ZOO = ROOT / "models" / "zoo"
FP32_OFF = ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage")
BUDGET_S = 2.0      # timed runs per model and mode: about this long in all, at least 5 per file
SUMMARY: list[str] = []
CHILD_SUMMARY = "summary: "


def layer_counts(param: Path) -> collections.Counter:
    return collections.Counter(line.split()[0] for line in param.read_text().splitlines()[2:] if line.strip())


def short_counts(counts: collections.Counter, top: int = 8) -> str:
    return " ".join(f"{t}:{n}" for t, n in counts.most_common(top))


def pnnx_files(model: Path, shapes: dict, dtypes: dict, folder: Path) -> tuple[Path, Path] | str:
    """pnnx's .param/.bin for `model` at `shapes` (input order), or why it failed."""
    from scripts.fetch_models import fetch
    local = folder / "m.onnx"
    shutil.copy(model, local)
    spec = ",".join(f"[{','.join(map(str, s))}]" + ("i64" if dtypes[n].kind in "iu" else "")
                    for n, s in shapes.items())
    result = subprocess.run([str(fetch("pnnx")), local.name, f"inputshape={spec}"], cwd=folder,
                            capture_output=True, text=True, timeout=600)
    param, bin_ = folder / "m.ncnn.param", folder / "m.ncnn.bin"
    if result.returncode != 0 or not param.exists():
        return f"pnnx failed: {(result.stderr or result.stdout).strip().splitlines()[-1:]}"
    return param, bin_


def net_runner(param: Path, bin_: Path, feed_sets: list[list[np.ndarray]], threads: int, fp32: bool):
    """A function running one inference (`run(item)`: on feed set `item`, feeds in input order) and
    returning the first output, or a string saying why the file does not load."""
    import ncnn
    net = ncnn.Net()
    if fp32:
        for opt in FP32_OFF:
            setattr(net.opt, opt, False)
    net.opt.num_threads = threads
    if net.load_param(str(param)) != 0 or net.load_model(str(bin_)) != 0:
        return "does not load in ncnn"
    inputs, outputs = net.input_names(), net.output_names()
    mat_sets = [[ncnn.Mat(f).clone() for f in feeds] for feeds in feed_sets]

    def run(item: int = 0):
        ex = net.create_extractor()
        for name, mat in zip(inputs, mat_sets[item]):
            ex.input(name, mat)
        ret, out = ex.extract(outputs[0])
        return np.array(out) if ret == 0 else None
    run.net = net          # keep the net alive with the runner
    run.items = len(mat_sets)
    return run


def all_items(run) -> np.ndarray | None:
    """The first output of every feed set, stacked when there are several."""
    results = [run(i) for i in range(run.items)]
    if any(r is None for r in results):
        return None
    return results[0] if len(results) == 1 else np.stack(results)


def pnnx_feed_sets(feeds: dict, ncnn_feeds: list[np.ndarray], graph) -> list[list[np.ndarray]]:
    """pnnx always drops the leading axis as the batch: its file is a one-item model. A batch N > 1
    that our file keeps is fed to pnnx's one item at a time: N feed sets, and the time of one run
    counts N times (N runs from python would also count N times python's call overhead)."""
    n = {feeds[name].shape[0] if feeds[name].ndim else 1 for name in graph.inputs}
    kept = all(graph.tensors[name].batch_axis is None for name in graph.inputs)
    if len(n) != 1 or not kept or n == {1}:
        return [ncnn_feeds]
    return [[np.atleast_1d(feeds[name][i]).astype(f.dtype) for name, f in zip(graph.inputs, ncnn_feeds)]
            for i in range(n.pop())]


def timings_ms(runners: list, repeat: int, rounds: int = 5) -> list[tuple[float, float]]:
    """(median, best) time of each runner over `rounds` rounds of consecutive blocks, the order of
    the blocks reversed every round; each block starts with an untimed run. Under load two OpenMP
    threads can wait whole scheduler ticks (the same file timed 0.15 and 238 ms in one run), so
    the best time is printed beside the median."""
    times = [[] for _ in runners]
    per_block = max(1, -(-repeat // rounds))
    for r in range(rounds):
        order = list(zip(runners, times))
        for run, samples in (order if r % 2 == 0 else order[::-1]):
            run()
            for _ in range(per_block):
                start = time.perf_counter()
                run()
                samples.append((time.perf_counter() - start) * 1e3)
    return [(statistics.median(t), min(t)) for t in times]


def repeats(runners: list, most: int) -> int:
    """Runs per file so that the rounds take about BUDGET_S (the real models run for seconds)."""
    start = time.perf_counter()
    for run in runners:
        run()
    each = (time.perf_counter() - start) / len(runners)
    return max(5, min(most, int(BUDGET_S / len(runners) / max(each, 1e-6))))


def keep_files(model: Path, files: dict[str, tuple[Path, Path]], keep: Path) -> None:
    """Copy each file pair to keep/<stem>.<who>.param/.bin."""
    keep.mkdir(parents=True, exist_ok=True)
    for who, (param, bin_) in files.items():
        shutil.copy(param, keep / f"{model.stem}.{who}.param")
        shutil.copy(bin_, keep / f"{model.stem}.{who}.bin")


def print_profiles(files: dict[str, tuple[Path, Path]], feeds: dict[str, list[np.ndarray]]) -> None:
    """Each file's time per layer type (1 thread, fp32), the costliest first."""
    from scripts.layer_profile import describe, profile_array_feeds
    for who, (param, bin_) in files.items():
        times = profile_array_feeds(param, bin_, feeds[who])
        print(f"  {who} per layer type (ms, count): {describe(times) if times else 'does not load'}")


def without_passes(model: Path, given: dict | None, skip: list[str], folder: Path) -> tuple[Path, Path]:
    """Our files for `model` converted with the passes named in `skip` left out."""
    from converter.api import NcnnModel
    from converter.onnx_side.loader import load_onnx_and_proto
    from passes import PIPELINE, run_pipeline
    skipped = {p for p in PIPELINE if p.__name__ in skip}
    if len(skipped) != len(set(skip)):
        raise SystemExit(f"--against-skip: passes are named {[p.__name__ for p in PIPELINE]}")
    graph, _ = load_onnx_and_proto(str(model), given, None)
    converted = NcnnModel(graph, run_pipeline(graph, skip=skipped))
    param, bin_ = folder / "skipped.param", folder / "skipped.bin"
    converted.save(param, bin_)
    return param, bin_


def bench(model: Path, given: dict | None, repeat: int, threads: list[int], defaults: bool,
          keep: Path | None = None, profile: bool = False, against_skip: list[str] | None = None) -> None:
    proto = prepare_model(model, given)
    ours = convert(proto)
    graph = ours.graph
    feeds = make_inputs(proto, graph, {}, seed=0)
    shapes = {n: list(feeds[n].shape) for n in graph.inputs}     # (the example sizes of dynamic axes)
    dtypes = {n: feeds[n].dtype for n in graph.inputs}
    ncnn_feeds = [ncnn_feed(feeds[n], graph.tensors[n], ncnn_dtype(graph, n)) for n in graph.inputs]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        param, bin_ = folder / "ours.param", folder / "ours.bin"
        ours.save(param, bin_)
        if against_skip:
            print(f"\n(pnnx below: our file converted without {', '.join(against_skip)})")
            theirs = without_passes(model, given, against_skip, folder)
            their_feeds = [ncnn_feeds]
        else:
            theirs = pnnx_files(model, shapes, dtypes, folder)
            their_feeds = pnnx_feed_sets(feeds, ncnn_feeds, graph)
        if keep is not None:
            keep_files(model, {"ours": (param, bin_)} | ({} if isinstance(theirs, str) else {"pnnx": theirs}), keep)
        print(f"\n{model.stem}: inputs {shapes}")
        print(f"  ours: {short_counts(layer_counts(param))}")
        if isinstance(theirs, str):
            print(f"  pnnx: {theirs}")
            SUMMARY.append(f"{model.stem:<24} {theirs}")
            return
        print(f"  pnnx: {short_counts(layer_counts(theirs[0]))}")
        if profile:
            print_profiles({"ours": (param, bin_), "pnnx": theirs},
                           {"ours": ncnn_feeds, "pnnx": their_feeds[0]})
        modes = [("fp32", True)] + ([("default", False)] if defaults else [])
        ratios = []
        for mode, fp32 in modes:
            for n in threads:
                a = net_runner(param, bin_, [ncnn_feeds], n, fp32)
                b = net_runner(*theirs, their_feeds, n, fp32)
                if isinstance(b, str) or isinstance(a, str):
                    print(f"  {mode} {n}t: ours {a if isinstance(a, str) else 'ok'}, "
                          f"pnnx {b if isinstance(b, str) else 'ok'}")
                    ratios.append(f"{mode} {n}t: pnnx file {b}" if isinstance(b, str) else f"{mode} {n}t: ours {a}")
                    continue
                out_a, out_b = a(), all_items(b)
                diff = (float(np.abs(out_a - out_b.reshape(out_a.shape)).max()) if out_a is not None
                        and out_b is not None and out_a.size == out_b.size else float("nan"))
                (t_a, best_a), (t_b, best_b) = timings_ms([a, b], repeats([a, b], repeat))
                t_b, best_b = t_b * b.items, best_b * b.items
                ratios.append(f"{mode} {n}t {t_a / t_b:.2f} (best {best_a / best_b:.2f})")
                print(f"  {mode} {n}t: median ours {t_a:.3f} ms  pnnx {t_b:.3f} ms  ratio {t_a / t_b:.2f};"
                      f"  best {best_a:.3f} / {best_b:.3f} ms  ratio {best_a / best_b:.2f};"
                      f"  max|ours-pnnx| {diff:.2e}", flush=True)
        SUMMARY.append(f"{model.stem:<24} ours/pnnx: {', '.join(ratios)}")


def bench_in_child(name: str, argv: list[str]) -> str:
    """Bench one model in a child process (a file that crashes ncnn, such as pnnx's for a batch it
    mixed up, must not end the run); its output passes through, its summary line is returned."""
    child = subprocess.run([sys.executable, __file__, "--child", *argv, name], stdout=subprocess.PIPE, text=True)
    lines = child.stdout.splitlines()
    print("\n".join(line for line in lines if not line.startswith(CHILD_SUMMARY)), flush=True)
    summary = [line[len(CHILD_SUMMARY):] for line in lines if line.startswith(CHILD_SUMMARY)]
    if summary:
        return summary[0]
    return f"{Path(name).stem:<24} crashed (exit {child.returncode}) in the ncnn runtime"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--defaults", action="store_true", help="also time ncnn's default options")
    parser.add_argument("--keep", type=Path, help="keep both files of each model in this folder")
    parser.add_argument("--profile", action="store_true", help="also print each file's time per layer type")
    parser.add_argument("--against-skip", help="time against our files converted without these passes "
                        "(comma-separated pass names) instead of pnnx's")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    from scripts.fetch_models import MODELS, fetch
    names = args.models or [*(str(ROOT / m) for m in BUNDLED), *REAL, *sorted(map(str, ZOO.glob("*.onnx")))]
    threads = [int(t) for t in args.threads.split(",")]
    if not args.child:
        argv = [f"--repeat={args.repeat}", f"--threads={args.threads}", *(["--defaults"] if args.defaults else []),
                *([f"--keep={args.keep}"] if args.keep else []), *(["--profile"] if args.profile else []),
                *([f"--against-skip={args.against_skip}"] if args.against_skip else [])]
        summary = [bench_in_child(name, argv) for name in names]
        print("\nsummary (median time ratio, below 1: our file is faster)")
        print("\n".join(summary))
        return
    for name in names:
        path = fetch(name) if name in MODELS else Path(name)
        try:
            bench(path, REAL.get(name), args.repeat, threads, args.defaults, args.keep, args.profile,
                  args.against_skip.split(",") if args.against_skip else None)
        except Exception as exc:      # one broken model must not hide the others' numbers
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            print(f"\n{Path(name).stem}: {why}")
            SUMMARY.append(f"{Path(name).stem:<24} {why}")
    print("\n".join(CHILD_SUMMARY + line for line in SUMMARY), flush=True)


if __name__ == "__main__":
    main()

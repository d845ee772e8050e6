"""Speed of our ncnn files against pnnx's for the same ONNX models, both run in the real ncnn runtime.

Usage: python scripts/bench_vs_pnnx.py [--repeat N] [--threads 1,2] [--defaults] [MODEL ...]
(default: the bundled transformer models, YOLOv8n and PP-OCRv4 det from the model cache, and every
/work/zoo_out/*.onnx; a MODEL is a path or a name from scripts/fetch_models.py)

Each model is converted by us and by pnnx (the binary from its wheel, run on the .onnx with the
same input shapes), then both files run on the same inputs in alternating rounds (fp32: fp16/bf16
off; `--defaults` adds a row with ncnn's default options) at each thread count. Prints the median
time ratio ours/pnnx, the largest output difference between the two files, and both files'
layer-type counts. The machine is shared and noisy: read the ratios, never assert them.
"""
from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter import convert  # noqa: E402
from converter.int_inputs import ncnn_dtype  # noqa: E402
from converter.onnx_loader import prepare_model  # noqa: E402
from converter.verify import make_inputs, ncnn_feed  # noqa: E402
from scripts.bench import medians_ms  # noqa: E402

BUNDLED = ["models/vit_tiny.onnx", "models/bert_tiny.onnx", "models/transformer_small.onnx"]
REAL = {"yolov8n_320": {"images": [1, 3, 320, 320]}, "ppocrv4_det": {"x": [1, 3, 640, 640]}}
ZOO = Path("/work/zoo_out")
FP32_OFF = ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage")


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


def net_runner(param: Path, bin_: Path, feeds: list[np.ndarray], threads: int, fp32: bool):
    """A function running one inference (feeds in input order) and returning the first output,
    or a string saying why the file does not load."""
    import ncnn
    net = ncnn.Net()
    if fp32:
        for opt in FP32_OFF:
            setattr(net.opt, opt, False)
    net.opt.num_threads = threads
    if net.load_param(str(param)) != 0 or net.load_model(str(bin_)) != 0:
        return "does not load in ncnn"
    inputs, outputs = net.input_names(), net.output_names()
    mats = [ncnn.Mat(f).clone() for f in feeds]

    def run():
        ex = net.create_extractor()
        for name, mat in zip(inputs, mats):
            ex.input(name, mat)
        ret, out = ex.extract(outputs[0])
        return np.array(out) if ret == 0 else None
    run.net = net          # keep the net alive with the runner
    return run


def bench(model: Path, given: dict | None, repeat: int, threads: list[int], defaults: bool) -> None:
    proto = prepare_model(model, given)
    ours = convert(proto)
    graph = ours.graph
    feeds = make_inputs(proto, graph, {}, seed=0)
    shapes = {n: list(graph.tensors[n].shape) for n in graph.inputs}
    dtypes = {n: feeds[n].dtype for n in graph.inputs}
    ncnn_feeds = [ncnn_feed(feeds[n], graph.tensors[n], ncnn_dtype(graph, n)) for n in graph.inputs]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        param, bin_ = folder / "ours.param", folder / "ours.bin"
        ours.save(param, bin_)
        theirs = pnnx_files(model, shapes, dtypes, folder)
        print(f"\n{model.stem}: inputs {shapes}")
        print(f"  ours: {short_counts(layer_counts(param))}")
        if isinstance(theirs, str):
            print(f"  pnnx: {theirs}")
            return
        print(f"  pnnx: {short_counts(layer_counts(theirs[0]))}")
        modes = [("fp32", True)] + ([("default", False)] if defaults else [])
        for mode, fp32 in modes:
            for n in threads:
                a = net_runner(param, bin_, ncnn_feeds, n, fp32)
                b = net_runner(*theirs, ncnn_feeds, n, fp32)
                if isinstance(b, str) or isinstance(a, str):
                    print(f"  {mode} {n}t: ours {a if isinstance(a, str) else 'ok'}, "
                          f"pnnx {b if isinstance(b, str) else 'ok'}")
                    continue
                out_a, out_b = a(), b()
                diff = (float(np.abs(out_a - out_b).max()) if out_a is not None and out_b is not None
                        and out_a.shape == out_b.shape else float("nan"))
                t_a, t_b = medians_ms([a, b], repeat)
                print(f"  {mode} {n}t: ours {t_a:.3f} ms  pnnx {t_b:.3f} ms  ours/pnnx {t_a / t_b:.2f}"
                      f"  max|ours-pnnx| {diff:.2e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--defaults", action="store_true", help="also time ncnn's default options")
    args = parser.parse_args()
    from scripts.fetch_models import MODELS, fetch
    names = args.models or [*(str(ROOT / m) for m in BUNDLED), *REAL, *sorted(map(str, ZOO.glob("*.onnx")))]
    threads = [int(t) for t in args.threads.split(",")]
    for name in names:
        path = fetch(name) if name in MODELS else Path(name)
        try:
            bench(path, REAL.get(name), args.repeat, threads, args.defaults)
        except Exception as exc:      # one broken model must not hide the others' numbers
            print(f"\n{Path(name).stem}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")


if __name__ == "__main__":
    main()

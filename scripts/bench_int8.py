"""int8 vs fp32 speed of the same model in the real ncnn runtime.

    python -m scripts.bench_int8 [--runs N] [--threads T] [--models NAME ...]

Converts the float model and its quantize_static QDQ version (scripts/quantize_models.py), runs
both in ncnn with fp16/bf16 off (so fp32 really is fp32) and int8 inference on, alternating one
run of each so load on a shared machine hits both alike, and prints per model the layer counts,
the best and the median time of each and the speed-up (fp32 / int8) of both. Times are the CPU
time of the running thread (ncnn on 1 thread runs in it): on a loaded machine wall time also
counts the time other processes held the core. Runs happen in this process: run it on its own.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from converter import convert  # noqa: E402
from scripts.fetch_models import fetch  # noqa: E402
from scripts.quantize_models import calibration_feeds, quantized  # noqa: E402

PAIRS = {"yolov8n_320": "yolov8n_320_int8", "ppocrv4_det": "ppocrv4_det_int8", "ppocrv4_rec": "ppocrv4_rec_int8"}


class Loaded:
    """A converted model loaded in the real ncnn, ready to run on `feeds`."""

    def __init__(self, path: str, feeds: dict, threads: int, tmp: Path):
        import ncnn
        self.ncnn, self.feeds = ncnn, feeds
        model = convert(path, input_shapes={k: list(v.shape) for k, v in feeds.items()})
        param, bin_ = tmp / f"{Path(path).stem}.param", tmp / f"{Path(path).stem}.bin"
        model.save(param, bin_)
        self.io, self.layers = model.io(), len(param.read_text().splitlines()) - 2
        self.net = ncnn.Net()
        for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            setattr(self.net.opt, opt, False)
        self.net.opt.use_int8_inference = True
        self.net.opt.num_threads = threads
        self.net.load_param(str(param))
        self.net.load_model(str(bin_))
        self.times: list[float] = []

    def run(self) -> None:
        start = time.thread_time()
        ex = self.net.create_extractor()
        for e in self.io["inputs"]:
            ex.input(e["ncnn"], self.ncnn.Mat(np.ascontiguousarray(self.feeds[e["onnx"]][0])).clone())
        for e in self.io["outputs"]:
            ex.extract(e["ncnn"])
        self.times.append(1000 * (time.thread_time() - start))


def compare(float_name: str, int8_name: str, runs: int, threads: int, size: tuple[int, int] | None = None) -> str:
    feeds = calibration_feeds(int8_name, seed=99)[0]
    if size:        # the image tiled out to (H, W): times do not depend on the values
        feeds = {k: np.resize(v, (*v.shape[:-2], *size)).astype(v.dtype) for k, v in feeds.items()}
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Loaded(str(fetch(float_name)), feeds, threads, Path(tmp))
        int8 = Loaded(str(quantized(int8_name)), feeds, threads, Path(tmp))
        for _ in range(runs + 1):
            fp32.run()
            int8.run()
    best = [min(m.times[1:]) for m in (fp32, int8)]             # the first run warms caches and allocators
    median = [float(np.median(m.times[1:])) for m in (fp32, int8)]
    return (f"{float_name}: layers fp32 {fp32.layers} int8 {int8.layers}; best fp32 {best[0]:.1f} ms int8 "
            f"{best[1]:.1f} ms ({best[0] / best[1]:.2f}x); median fp32 {median[0]:.1f} ms int8 {median[1]:.1f} ms "
            f"({median[0] / median[1]:.2f}x) (thread CPU time, {threads} thread(s), {runs} alternating runs, "
            f"input {list(next(iter(feeds.values())).shape)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="more than 1: thread CPU time misses the workers")
    parser.add_argument("--models", nargs="*", default=list(PAIRS), choices=list(PAIRS))
    parser.add_argument("--size", type=lambda text: tuple(int(v) for v in text.split("x")),
                        help="HxW: every image input tiled out to this height and width (default: the test inputs')")
    args = parser.parse_args()
    for name in args.models:
        print(compare(name, PAIRS[name], args.runs, args.threads, args.size), flush=True)


if __name__ == "__main__":
    main()

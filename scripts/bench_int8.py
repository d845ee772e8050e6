"""int8 vs fp32 speed of the same model in the real ncnn runtime.

    python -m scripts.bench_int8 [--runs N] [--threads T]

Converts the float model and its quantize_static QDQ version (scripts/quantize_models.py), runs
both in ncnn with fp16/bf16 off (so fp32 really is fp32) and int8 inference on, and prints the
median time per run and the speed-up. Runs happen in this process: run it on its own.
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


def median_ms(path: str, feeds: dict, runs: int, threads: int) -> float:
    import ncnn
    model = convert(path, input_shapes={k: list(v.shape) for k, v in feeds.items()})
    with tempfile.TemporaryDirectory() as tmp:
        param, bin_ = Path(tmp) / "m.param", Path(tmp) / "m.bin"
        model.save(param, bin_)
        io = model.io()
        net = ncnn.Net()
        for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            setattr(net.opt, opt, False)
        net.opt.use_int8_inference = True
        net.opt.num_threads = threads
        net.load_param(str(param))
        net.load_model(str(bin_))
        times = []
        for _ in range(runs + 1):          # the first run warms caches and allocators
            start = time.perf_counter()
            ex = net.create_extractor()
            for e in io["inputs"]:
                ex.input(e["ncnn"], ncnn.Mat(np.ascontiguousarray(feeds[e["onnx"]][0])).clone())
            for e in io["outputs"]:
                ex.extract(e["ncnn"])
            times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times[1:]))


def without_float_pairs(path: str, into: Path) -> str:
    """The QDQ model with every activation Q/DQ pair that feeds no Conv/Gemm/MatMul removed: an
    approximation (each value moves by up to half a step) that shows what the int8 layers alone
    gain; the exact conversion emulates those pairs in float (four element-wise layers each)."""
    import onnx
    model = onnx.load(path)
    nodes = model.graph.node
    producer = {o: n for n in nodes for o in n.output}
    readers: dict[str, set] = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, set()).add(n.op_type)
    rename = {}
    for n in nodes:
        q = producer.get(n.input[0]) if n.op_type == "DequantizeLinear" else None
        if q is not None and q.op_type == "QuantizeLinear" and not readers.get(n.output[0], set()) & {
                "Conv", "Gemm", "MatMul"} and n.output[0] not in {o.name for o in model.graph.output}:
            rename[n.output[0]] = q.input[0]
    for n in nodes:
        n.input[:] = [rename.get(i, i) for i in n.input]
    target = into / "pairs_dropped.onnx"
    onnx.save(model, str(target))
    return str(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for float_name, int8_name in PAIRS.items():
        feeds = calibration_feeds(int8_name, seed=99)[0]
        fp32 = median_ms(str(fetch(float_name)), feeds, args.runs, args.threads)
        int8 = median_ms(str(quantized(int8_name)), feeds, args.runs, args.threads)
        with tempfile.TemporaryDirectory() as tmp:
            bare = median_ms(without_float_pairs(str(quantized(int8_name)), Path(tmp)), feeds, args.runs,
                             args.threads)
        print(f"{float_name}: fp32 {fp32:.1f} ms, int8 exact {int8:.1f} ms ({fp32 / int8:.2f}x), "
              f"int8 without float Q/DQ pairs {bare:.1f} ms ({fp32 / bare:.2f}x) "
              f"({args.threads} thread(s), median of {args.runs})")


if __name__ == "__main__":
    main()

"""Speed of the interpreter against onnxruntime and the real ncnn runtime, measured in one run.

Usage: python scripts/bench.py [--repeat N] [--input-shape NAME=DIMS] [MODEL ...]
(default: every bundled model, then the real YOLOv8n and PP-OCRv4 det; a MODEL is a
path or a name from scripts/fetch_models.py)
Prints the conversion time, per-model medians (ms) and the ratios
interpreter/onnxruntime and interpreter/ncnn. Both runtimes use 2 threads. This machine is shared and
noisy: read ratios, not absolute times, and never assert them in a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter import convert  # noqa: E402
from converter.cli import parse_dims  # noqa: E402
from converter.shapes.int_inputs import ncnn_dtype  # noqa: E402
from converter.verification.feeds import make_inputs, ncnn_feed  # noqa: E402
from converter.onnx_side.loader import prepare_model  # noqa: E402

THREADS = 2
# real models benchmarked by default, at the size their package feeds them
REAL_MODELS = {"yolov8n_320": {"images": [1, 3, 320, 320]}, "ppocrv4_det": {"x": [1, 3, 640, 640]}}


ROUNDS = 5


def medians_ms(runners: list, repeat: int) -> list[float]:
    """Median time of each runner. The runs come in ROUNDS rounds of consecutive blocks,
    one block per runner, so that load changes on the shared machine hit every runtime
    alike; each block starts with an untimed run, so a runtime never pays for the
    previous one's threads still spinning or its caches."""
    times = [[] for _ in runners]
    per_block = max(1, -(-repeat // ROUNDS))
    for _ in range(ROUNDS):
        for run, samples in zip(runners, times):
            run()
            for _ in range(per_block):
                start = time.perf_counter()
                run()
                samples.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(samples) for samples in times]


def bench_model(path: Path, repeat: int, input_shapes: dict | None = None) -> tuple[float, float, float, float]:
    import ncnn
    import onnxruntime as ort
    start = time.perf_counter()
    proto = prepare_model(path, input_shapes)
    model = convert(proto)
    t_convert = time.perf_counter() - start
    feeds = make_inputs(proto, model.graph, {}, seed=0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ncnn_feeds = {n: ncnn_feed(feeds[n], model.graph.tensors[n], ncnn_dtype(model.graph, n)) for n in model.graph.inputs}
    with tempfile.TemporaryDirectory() as folder:
        param, bin_ = Path(folder) / "m.param", Path(folder) / "m.bin"
        model.save(param, bin_)
        names = model.names.blob
        net = ncnn.Net()
        for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            setattr(net.opt, opt, False)
        net.opt.num_threads = THREADS
        net.load_param(str(param))
        net.load_model(str(bin_))
        mats = {names[k]: ncnn.Mat(v).clone() for k, v in ncnn_feeds.items()}
        outs = [names[o] for o in model.graph.outputs]

        def run_ncnn():
            ex = net.create_extractor()
            for k, m in mats.items():
                ex.input(k, m)
            for o in outs:
                ex.extract(o)
        # NcnnModel.run reuses its execution plan, as a user's loop would
        t_ort, t_interp, t_ncnn = medians_ms([lambda: session.run(None, feeds), lambda: model.run(ncnn_feeds, layout="ncnn"),
                                              run_ncnn], repeat)
    return t_convert, t_ort, t_interp, t_ncnn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--input-shape", action="append", metavar="NAME=DIMS",
                        help="fix a dynamic input's shape (e.g. input=1,3,224,224), as in convert")
    args = parser.parse_args()
    from scripts.fetch_models import MODELS, fetch
    shapes = dict(parse_dims(t) for t in args.input_shape or [])
    names = args.models or [*sorted(str(p) for p in (ROOT / "models").glob("*.onnx")), *REAL_MODELS]
    print(f"{'model':<20} {'convert s':>9} {'onnxruntime ms':>15} {'interp ms':>10} {'ncnn ms':>8} "
          f"{'interp/ort':>11} {'interp/ncnn':>12}")
    for name in names:
        path = fetch(name) if name in MODELS else Path(name)
        given = shapes or REAL_MODELS.get(name)
        t_convert, t_ort, t_interp, t_ncnn = bench_model(path, args.repeat, given)
        print(f"{Path(name).stem:<20} {t_convert:>9.2f} {t_ort:>15.3f} {t_interp:>10.3f} {t_ncnn:>8.3f} "
              f"{t_interp / t_ort:>11.2f} {t_interp / t_ncnn:>12.2f}", flush=True)


if __name__ == "__main__":
    main()

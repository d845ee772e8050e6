"""Per-step decode time of the encoder-decoder step files (models/encdec): ours in the real ncnn
against onnxruntime on the same ONNX decoder_with_past file, both on 1 thread, at one past length.

    python scripts/bench_encdec.py [--past 32] [--runs 200]

Prints, per model and exporter, the layer count and the median time of one decode step (net loaded
once; in ncnn a new extractor per step, as a host loop runs it). A benchmark, never a test."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from converter import convert  # noqa: E402
from converter.ncnn_side.layout import to_ncnn  # noqa: E402

MODELS = ROOT / "models" / "encdec"


def step_feeds(session: ort.InferenceSession, past: int, rng) -> dict[str, np.ndarray]:
    feeds = {}
    for i in session.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = np.array([[5]], np.int64)
        elif i.name == "encoder_attention_mask":
            feeds[i.name] = np.ones((1, 12), np.int64)
        else:
            dims = [d if isinstance(d, int) else None for d in i.shape]
            shape = [1, dims[1], past if ".decoder." in i.name else (dims[2] or 12), dims[3]]
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def median_time(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> int:
    import ncnn
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--past", type=int, default=32)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    manifest = json.loads((MODELS / "manifest.json").read_text())
    rng = np.random.default_rng(0)
    print(f"{'model':<22}{'layers':>7}{'ncnn ms':>10}{'ort ms':>10}{'ncnn/ort':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, entry in manifest.items():
            for exp, parts in entry["files"].items():
                path = MODELS / parts["decoder_with_past"]
                options = ort.SessionOptions()
                options.intra_op_num_threads = options.inter_op_num_threads = 1
                session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                feeds = step_feeds(session, args.past, rng)
                model = convert(path)
                param, bin_ = Path(tmp) / f"{path.stem}.param", Path(tmp) / f"{path.stem}.bin"
                model.save(param, bin_)
                io = model.io()
                net = ncnn.Net()
                for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
                    setattr(net.opt, opt, False)
                net.opt.num_threads = 1
                net.load_param(str(param))
                net.load_model(str(bin_))
                mats = {e["ncnn"]: ncnn.Mat(np.ascontiguousarray(to_ncnn(feeds[e["onnx"]], e))).clone()
                        for e in io["inputs"]}
                outs = [e["ncnn"] for e in io["outputs"]]

                def run_ncnn():
                    ex = net.create_extractor()
                    for blob, mat in mats.items():
                        ex.input(blob, mat)
                    for blob in outs:
                        ex.extract(blob)
                ours = median_time(run_ncnn, args.runs)
                theirs = median_time(lambda: session.run(None, feeds), args.runs)
                layers = sum(1 for n in model.graph.nodes.values() if n.ncnn)
                print(f"{name + ' ' + exp:<22}{layers:>7}{ours * 1e3:>10.3f}{theirs * 1e3:>10.3f}{ours / theirs:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

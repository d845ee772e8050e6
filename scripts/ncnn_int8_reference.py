"""What ncnn's own int8 placement reaches on a model, beside fast mode's, in the real ncnn (1 thread).

    python -m scripts.ncnn_int8_reference [--models NAME ...] [--rounds N] [--ncnn2int8 PATH]

ncnn's tools (ncnn2table + ncnn2int8, tools/quantize) quantize every Convolution / ConvolutionDepthWise /
InnerProduct the calibration table names (int8_scale_term 2, 1 for depthwise) and then fuse_requantize: a
Convolution or ConvolutionDepthWise whose output only int8 Convolution / ConvolutionDepthWise layers read
(directly or through one Split) writes int8 itself, requantized with the first reader's input scale
(int8_scale_term + 100), so no float blob is written or read between them. This script builds that
placement from the QDQ model's scales (the ones fast mode uses, so only the placement differs) and times,
alternating rounds like scripts/bench_int8.py:

    fp32       the float model's file
    fast       `--int8 fast` as committed
    fast+rq    fast's placement with requantize wherever ncnn2int8 would fuse it
    ncnn       every planned layer int8, requantize fused: ncnn2int8's placement, written by our writer
    ncnn2int8  (with --ncnn2int8 PATH, a built tools/quantize/ncnn2int8) the real tool run on a float file
               of the same graph (the int8 layers' weights dequantized) and a table of those scales

and prints per file the best and median thread CPU time over the rounds, fp32 / it, its int8 layer count
(requantized ones) and its distance (relative RMS) from onnxruntime's run of the float model (ncnn2int8
stores the weights of layers it leaves float as fp16, so its distance is larger where those matter). Runs
happen in this process: run it on its own.

ncnn2int8 needs only a plain libncnn (it rewrites files, the kernels do not matter): configure ncnn's
source with NCNN_RUNTIME_CPU, NCNN_SSE2, NCNN_AVX*, NCNN_VULKAN and NCNN_OPENMP off and WITH_LAYER_x off for
the layers these models do not use, `make ncnn`, then compile tools/quantize/ncnn2int8.cpp against it
(-I src -I <build>/src -I src/layer; it includes tools/modelwriter.h and tests/prng.h of the same checkout):
about ten minutes on one core.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from converter import convert  # noqa: E402
from scripts.bench_int8 import MODELS, feeds_at, timing_net, onnxruntime_run, rel_rms  # noqa: E402
from scripts.int8_layer_profile import float_form  # noqa: E402
from scripts.quantize_models import QUANTIZED, quantized  # noqa: E402

apply_int8 = importlib.import_module("passes.apply_int8")
CONVS = ("Convolution", "ConvolutionDepthWise")


def fast_model(int8_name: str, feeds: dict, every_layer: bool):
    """The fast-mode conversion; `every_layer`: with fast mode's float exceptions off (every planned layer int8)."""
    saved = apply_int8._fast_float
    if every_layer:
        apply_int8._fast_float = lambda graph, node: None
    try:
        return convert(str(quantized(int8_name)), input_shapes={k: list(v.shape) for k, v in feeds.items()},
                       int8="fast")
    finally:
        apply_int8._fast_float = saved


def is_int8(node) -> bool:
    return node.op in (*CONVS, "InnerProduct") and int(node.params.get(8, 0)) > 0


def fuse_requantize(graph) -> int:
    """ncnn2int8's fuse_requantize on our graph: an int8 Convolution / ConvolutionDepthWise every reader of
    whose output is an int8 Convolution / ConvolutionDepthWise with one input writes int8 (8 += 100, the
    first reader's input scale appended as its output scale). Returns how many."""
    fused = 0
    for node in graph.topological():
        readers = graph.consumers(node.outputs[0])
        if node.op not in CONVS or not is_int8(node) or not readers or node.outputs[0] in graph.outputs:
            continue
        if all(r.op in CONVS and is_int8(r) and len(r.inputs) == 1 for r in readers):
            node.params[8] = int(node.params[8]) + 100
            node.weights = [*node.weights, np.asarray(readers[0].weights[-1], np.float32).ravel()[:1]]
            fused += 1
    return fused


def dequantize(node) -> None:
    """Back to the float layer holding the int8 layer's dequantized weights."""
    form = float_form(node)
    node.params, node.weights = form.params, form.weights


def placements(float_name: str, tmp: Path, tool: str | None) -> dict[str, tuple[Path, dict, str]]:
    """{tag: (.param path, its inputs and outputs, note)} for every file this script times."""
    int8_name, size = MODELS[float_name]
    feeds = feeds_at(int8_name, size)
    files = {}

    def save(model, tag: str, note: str) -> None:
        model.save(tmp / f"{tag}.param", tmp / f"{tag}.bin")
        files[tag] = (tmp / f"{tag}.param", model.io(), note)

    shapes = {k: list(v.shape) for k, v in feeds.items()}
    save(convert(str(QUANTIZED[int8_name].source()), input_shapes=shapes), "fp32", "")
    model = fast_model(int8_name, feeds, every_layer=False)
    save(model, "fast", f"{sum(map(is_int8, model.graph.nodes.values()))} int8")
    fused = fuse_requantize(model.graph)
    save(model, "fast+rq", f"{sum(map(is_int8, model.graph.nodes.values()))} int8, {fused} requantized")
    model = fast_model(int8_name, feeds, every_layer=True)
    layers = [n for n in model.graph.topological() if is_int8(n)]
    table = [(model.names.layer[n.name], np.asarray(n.weights[-2]).ravel(), np.asarray(n.weights[-1]).ravel())
             for n in layers]
    fused = fuse_requantize(model.graph)
    save(model, "ncnn", f"{len(layers)} int8, {fused} requantized")
    if tool:
        model = fast_model(int8_name, feeds, every_layer=True)
        for node in [n for n in model.graph.topological() if is_int8(n)]:
            dequantize(node)
        save(model, "float", "")
        float_file = files.pop("float")
        lines = [f"{name}_param_0 " + " ".join(f"{v:.9g}" for v in w) for name, w, _ in table]
        lines += [f"{name} " + " ".join(f"{v:.9g}" for v in b) for name, _, b in table]
        (tmp / "table").write_text("\n".join(lines) + "\n")
        done = subprocess.run([tool, str(tmp / "float.param"), str(tmp / "float.bin"), str(tmp / "ncnn2int8.param"),
                               str(tmp / "ncnn2int8.bin"), str(tmp / "table")], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{tool} failed: {done.stderr.strip().splitlines()[-1:]}")
        log = done.stderr.splitlines()
        files["ncnn2int8"] = (tmp / "ncnn2int8.param", float_file[1], f"{sum(x.startswith('quantize_') for x in log)} int8, "
                                                       f"{sum(x.startswith('fuse_requantize') for x in log)} requantized")
    return files


class Timed:
    """An ncnn file loaded with fp16/bf16 off, int8 on, 1 thread; runs on the model's ONNX-named feeds."""

    def __init__(self, param: Path, io: dict, feeds: dict):
        import ncnn
        self.ncnn, self.io, self.feeds, self.times = ncnn, io, feeds, []
        self.net = timing_net(param, param.with_suffix(".bin"))
        self.arrays = {e["ncnn"]: np.ascontiguousarray(feeds[e["onnx"]][0], np.float32) for e in io["inputs"]}

    def run(self) -> list[np.ndarray]:
        start = time.thread_time()
        ex = self.net.create_extractor()
        for name, array in self.arrays.items():
            ex.input(name, self.ncnn.Mat(array).clone())
        got = [np.array(ex.extract(e["ncnn"])[1]) for e in self.io["outputs"]]
        self.times.append(1000 * (time.thread_time() - start))
        return got


def compare(float_name: str, rounds: int, tool: str | None) -> None:
    int8_name, size = MODELS[float_name]
    feeds = feeds_at(int8_name, size)
    with tempfile.TemporaryDirectory() as tmp:
        files = placements(float_name, Path(tmp), tool)
        nets = {tag: Timed(param, io, feeds) for tag, (param, io, _) in files.items()}
        outputs = {tag: net.run() for tag, net in nets.items()}
        for net in nets.values():
            net.times.clear()
        for _ in range(rounds):
            for net in nets.values():
                net.run()
    want = onnxruntime_run(str(QUANTIZED[int8_name].source()), feeds)
    best = {tag: min(net.times) for tag, net in nets.items()}
    median = {tag: statistics.median(net.times) for tag, net in nets.items()}
    print(f"\n{float_name} {list(next(iter(feeds.values())).shape)} (thread CPU time, best / median of {rounds} "
          f"alternating rounds, 1 thread)")
    for tag, net in nets.items():
        print(f"  {tag:10s} {best[tag]:7.2f} / {median[tag]:7.2f} ms  {best['fp32'] / best[tag]:.2f}x / "
              f"{median['fp32'] / median[tag]:.2f}x  from float {rel_rms(outputs[tag], want):.3g}  {files[tag][2]}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["mobilenet_v2_224", "ppocrv4_rec", "ppocrv4_det"],
                        choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ncnn2int8", help="path of a built ncnn2int8 (tools/quantize) to run as well")
    args = parser.parse_args()
    for name in args.models:
        compare(name, args.rounds, args.ncnn2int8)


if __name__ == "__main__":
    main()

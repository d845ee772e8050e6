"""int8 (exact and fast modes) vs fp32 speed and accuracy of the same model in the real ncnn runtime.

    python -m scripts.bench_int8 [--rounds N] [--models NAME ...] [--depthwise-int8]

Converts the float model and its quantize_static QDQ version (scripts/quantize_models.py; MobileNetV2 and
ResNet-18 need scripts/export_bench_cnns.py run once with the tools venv) twice, `--int8 exact` and
`--int8 fast`, runs the three in ncnn with fp16/bf16 off (so fp32 really is fp32), int8 inference on and one
thread, at deployed input sizes, in alternating rounds (one run of each per round, so load on a shared
machine hits all alike), and prints per model the best time of each over the rounds (the least disturbed run
on a noisy machine) and the median one, the speed-ups fp32 / int8 of both, and each int8 file's distance on
the same input: relative RMS error (|a - b| / |b| over all outputs) from onnxruntime's run of the float
model and of the QDQ model, beside onnxruntime's own int8-vs-float distance; for classifiers, whether top-1
agrees with the float model. Times are the CPU time of the running thread (ncnn on 1 thread runs in it): on
a loaded machine wall time also counts the time other processes held the core. `--depthwise-int8` times fast
mode with ConvolutionDepthWise in int8 too (fast mode keeps it in float; this shows why;
scripts/int8_layer_profile.py times each layer shape alone).
Runs happen in this process: run it on its own.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from converter import convert  # noqa: E402
from converter.ncnn_side.child import configure_net  # noqa: E402
from passes.apply_int8 import FAST_FLOAT  # noqa: E402
from scripts.quantize_models import QUANTIZED, calibration_feeds, quantized, text_page  # noqa: E402

# float model -> (its QDQ version, deployed input (H, W) of every image input, None: the calibration's)
MODELS = {"yolov8n_320": ("yolov8n_320_int8", None), "ppocrv4_det": ("ppocrv4_det_int8", (640, 640)),
          "ppocrv4_rec": ("ppocrv4_rec_int8", (48, 320)), "mobilenet_v2_224": ("mobilenet_v2_224_int8", None),
          "resnet18_224": ("resnet18_224_int8", None), "vit_tiny": ("vit_tiny_int8", None),
          "bert_tiny": ("bert_tiny_int8", None)}
CLASSIFIERS = {"mobilenet_v2_224", "resnet18_224", "vit_tiny"}



def timing_net(param, bin_):
    """An ncnn Net on the files for timing: 1 thread, fp32 arithmetic (fp16/bf16 off), int8 layers on."""
    import ncnn
    net = ncnn.Net()
    configure_net(net, "fp32", 1)
    net.load_param(str(param))
    net.load_model(str(bin_))
    return net

class Loaded:
    """A model converted (int8 mode `mode`) and loaded in the real ncnn, ready to run on `feeds`."""

    def __init__(self, path: str, feeds: dict, tmp: Path, tag: str, mode: str = "exact"):
        import ncnn
        self.ncnn, self.feeds = ncnn, feeds
        model = convert(path, input_shapes={k: list(v.shape) for k, v in feeds.items()}, int8=mode)
        param, bin_ = tmp / f"{tag}.param", tmp / f"{tag}.bin"
        model.save(param, bin_)
        self.io, self.layers = model.io(), len(param.read_text().splitlines()) - 2
        self.int8_layers = model.stats.get("int8_layers", 0)
        self.net = timing_net(param, bin_)
        self.times: list[float] = []

    def run(self) -> dict[str, np.ndarray]:
        start = time.thread_time()
        ex = self.net.create_extractor()
        for e in self.io["inputs"]:
            # a named contiguous array: ncnn.Mat(array) borrows its memory without holding it, so a temporary
            # copy (of a transposed OCR page) would be freed before clone() reads it
            array = np.ascontiguousarray(self.feeds[e["onnx"]][0], np.int32 if e["dtype"] == "int32" else np.float32)
            ex.input(e["ncnn"], self.ncnn.Mat(array).clone())
        got = {e["onnx"]: np.array(ex.extract(e["ncnn"])[1]) for e in self.io["outputs"]}
        self.times.append(1000 * (time.thread_time() - start))
        return got


def onnxruntime_run(path: str, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return [np.asarray(v, np.float64) for v in session.run(names, feeds)]


def rel_rms(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """|got - want| / |want| over all outputs (each flattened; ncnn drops the batch axis)."""
    g = np.concatenate([np.ravel(a) for a in got]).astype(np.float64)
    w = np.concatenate([np.ravel(a) for a in want]).astype(np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def feeds_at(int8_name: str, size: tuple[int, int] | None) -> dict:
    """A realistic input not among the calibration's: at `size` (H, W), a text page drawn at that size for
    the OCR models (scales calibrated on pages keep fitting), else the image tiled out."""
    feeds = calibration_feeds(int8_name, seed=99)[0]
    if size and int8_name.startswith("ppocr"):
        return {"x": text_page((1, 3, *size), np.random.default_rng(99))}
    if size:
        feeds = {k: np.resize(v, (*v.shape[:-2], *size)).astype(v.dtype) for k, v in feeds.items()}
    return feeds


def compare(float_name: str, rounds: int, depthwise_int8: bool) -> str:
    int8_name, size = MODELS[float_name]
    feeds = feeds_at(int8_name, size)
    float_path, int8_path = str(QUANTIZED[int8_name].source()), str(quantized(int8_name))
    with tempfile.TemporaryDirectory() as tmp:
        saved = dict(FAST_FLOAT)
        if depthwise_int8:
            FAST_FLOAT.clear()
        try:
            nets = {"fp32": Loaded(float_path, feeds, Path(tmp), "fp32"),
                    "exact": Loaded(int8_path, feeds, Path(tmp), "exact"),
                    "fast": Loaded(int8_path, feeds, Path(tmp), "fast", mode="fast")}
        finally:
            FAST_FLOAT.update(saved)
        outputs = {k: net.run() for k, net in nets.items()}        # the warm-up run, not timed
        for net in nets.values():
            net.times.clear()
        for _ in range(rounds):
            for net in nets.values():
                net.run()
    names = [e["onnx"] for e in nets["fp32"].io["outputs"]]
    ort_float, ort_int8 = onnxruntime_run(float_path, feeds), onnxruntime_run(int8_path, feeds)
    best = {k: min(net.times) for k, net in nets.items()}
    median = {k: statistics.median(net.times) for k, net in nets.items()}
    line = [f"{float_name} {list(next(iter(feeds.values())).shape)}: fp32 {best['fp32']:.1f} ms "
            f"(median {median['fp32']:.1f})"]
    for mode in ("exact", "fast"):
        got = [outputs[mode][n] for n in names]
        top1 = ""
        if float_name in CLASSIFIERS:
            top1 = f", top-1 {'=' if np.argmax(got[0]) == np.argmax(ort_float[0]) else '!='} float"
        line.append(f"{mode} {best[mode]:.1f} ms ({best['fp32'] / best[mode]:.2f}x; median {median[mode]:.1f} ms, "
                    f"{median['fp32'] / median[mode]:.2f}x; {nets[mode].layers} layers, "
                    f"{nets[mode].int8_layers} int8; from float {rel_rms(got, ort_float):.3g}, "
                    f"from ort int8 {rel_rms(got, ort_int8):.3g}{top1})")
    line.append(f"ort int8 from float {rel_rms(ort_int8, ort_float):.3g}")
    return "; ".join(line) + f" [best and median of {rounds} alternating rounds, thread CPU time, 1 thread]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--depthwise-int8", action="store_true", help="fast mode with ConvolutionDepthWise in int8 too")
    args = parser.parse_args()
    for name in args.models:
        print(compare(name, args.rounds, args.depthwise_int8), flush=True)


if __name__ == "__main__":
    main()

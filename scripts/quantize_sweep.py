"""Breadth sweep of onnxruntime.quantization options over float models: each quantized model
converts and matches onnxruntime in the real ncnn and the interpreter, or is refused in one line.

    python -m scripts.quantize_sweep [--models a,b] [--configs c,d] [--real]

Prints one row per (model, options): pass / refused(reason) / wrong(what) / crash(what), or drift: every
layer within one step of its quantizer but end to end beyond both yardsticks below.
The judge is the one the tests use for quantized models:
- per layer (converter.verify on a quantized model): each layer on onnxruntime's values of its inputs
  lands within one step of its quantizer (converter/verification/quantization_steps.py), in both backends;
- end to end, QDQ and QOperator: no further from the QDQ spec graph (onnxruntime, optimizations off)
  than the larger of two yardsticks: onnxruntime's own int8 execution, and the spec graph quantizing
  with the converted file's arithmetic (tests/real_models/quantizer_twin.py): worst element within
  1.5x, mean within 5x (tests/real_models/test_quantized_models.py); quantize_dynamic: within 1e-5 of
  the largest output.
Calibration: a few random inputs drawn from the zoo manifest's specs (the real models' from
scripts/quantize_models.py); judged on an input not among them. Quantized files go to a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.onnx_judge import draw_feeds, first_line  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "models" / "zoo"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())

ZOO_MODELS = ["mobilenetv3_small_ts", "efficientnet_b0_ts", "regnety_ts", "convnext_ts", "vit_ts", "bert_ts",
              "distilbert_ts", "whisper_encoder_ts"]
REAL_MODELS = ["yolov8n_320_int8", "ppocrv4_rec_int8"]       # their float sources and feeds in quantize_models

EXTRA_OPS = ["Conv", "MatMul", "Gemm", "Add", "Mul", "Softmax", "LayerNormalization", "Gather", "Concat",
             "Sigmoid", "Relu", "Resize", "Pad", "Transpose", "Reshape", "AveragePool", "GlobalAveragePool",
             "MaxPool", "Split", "Where", "Div", "Sub"]

# name -> quantize_static keyword arguments over the base (QDQ, symmetric int8, int8 weights per channel);
# "form": "qdq" / "qoperator" / "dynamic"; strings are QuantType / CalibrationMethod member names
BASE = {"form": "qdq", "activation_type": "QInt8", "weight_type": "QInt8", "per_channel": True,
        "reduce_range": False, "calibrate_method": "MinMax", "extra_options": {"ActivationSymmetric": True,
                                                                               "WeightSymmetric": True}}
CONFIGS = {
    "qdq_s8": {},
    "qdq_u8": {"activation_type": "QUInt8", "extra_options": {}},
    "qdq_s8_asym": {"extra_options": {"ActivationSymmetric": False, "WeightSymmetric": True}},
    "qdq_w_u8": {"activation_type": "QUInt8", "weight_type": "QUInt8", "extra_options": {}},
    "qdq_u8u8_tensor": {"activation_type": "QUInt8", "weight_type": "QUInt8", "per_channel": False,
                        "extra_options": {}},
    "qdq_per_tensor": {"per_channel": False},
    "qdq_reduce_range": {"reduce_range": True},
    "qdq_entropy": {"calibrate_method": "Entropy"},
    "qdq_percentile": {"calibrate_method": "Percentile"},
    "qdq_all_ops": {"op_types_to_quantize": EXTRA_OPS},
    "qdq_u8_all_ops": {"activation_type": "QUInt8", "op_types_to_quantize": EXTRA_OPS, "extra_options": {}},
    "qdq_matmul_axis1": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True,
                                           "QDQOpTypePerChannelSupportToAxis": {"MatMul": 1}}},
    "qdq_weight_pairs": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True,
                                           "AddQDQPairToWeight": True, "DedicatedQDQPair": True}},
    "qdq_w_asym": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": False}},
    "qdq_force_all": {"op_types_to_quantize": EXTRA_OPS,
                      "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True,
                                        "ForceQuantizeNoInputCheck": True, "MatMulConstBOnly": False}},
    "qdq_keep_removable": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True,
                                             "QDQKeepRemovableActivations": True}},
    "qdq_u16": {"activation_type": "QUInt16", "extra_options": {}},
    "qdq_s16": {"activation_type": "QInt16"},
    "qdq_w_s4": {"weight_type": "QInt4"},
    "qdq_f8": {"activation_type": "QFLOAT8E4M3FN", "weight_type": "QFLOAT8E4M3FN", "per_channel": False,
               "calibrate_method": "Distribution", "extra_options": {}},
    "qdq_contrib_ops": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True,
                                          "UseQDQContribOps": True}},
    "qop_s8": {"form": "qoperator"},
    "qop_u8": {"form": "qoperator", "activation_type": "QUInt8", "extra_options": {}},
    "qop_u8_tensor_rr": {"form": "qoperator", "activation_type": "QUInt8", "weight_type": "QUInt8",
                         "per_channel": False, "reduce_range": True, "extra_options": {}},
    "qop_all_ops": {"form": "qoperator", "op_types_to_quantize": EXTRA_OPS},
    "dynamic_rr": {"form": "dynamic", "reduce_range": True},
    "dynamic_u8w": {"form": "dynamic", "weight_type": "QUInt8", "reduce_range": True},
    "dynamic_per_channel": {"form": "dynamic", "per_channel": True, "reduce_range": True},
}
CALIBRATION_INPUTS = 3
CELL_SECONDS = 600


def _timeout(signum, frame):
    raise TimeoutError


def options(name: str) -> dict:
    return {**BASE, **CONFIGS[name]}


def model_source(model: str) -> tuple[Path, callable]:
    """The float model's path and a feeds(seed) function."""
    if model in MANIFEST:
        specs = {i["name"]: i for i in MANIFEST[model]["inputs"]}
        return ZOO / f"{model}.onnx", lambda seed: draw_feeds(specs, seed)
    from scripts.quantize_models import QUANTIZED
    spec = QUANTIZED[model]
    return spec.source(), lambda seed: spec.feeds(np.random.default_rng(seed))


def quantize(source: Path, target: Path, opts: dict, feeds: list[dict]) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from scripts.quantize_models import _at_least_opset13

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(feeds)

        def get_next(self):
            return next(self.items, None)

    prepared = target.with_name(target.stem + "_prep.onnx")
    try:
        quant_pre_process(str(_at_least_opset13(source, target.parent)), str(prepared), skip_symbolic_shape=True)
    except Exception:        # the pre-processing is a recommendation; quantize the model as it is then
        prepared = _at_least_opset13(source, target.parent)
    extra = dict(opts["extra_options"])
    common = {"per_channel": opts["per_channel"], "reduce_range": opts["reduce_range"],
              "weight_type": QuantType[opts["weight_type"]], "extra_options": extra}
    if "op_types_to_quantize" in opts:
        common["op_types_to_quantize"] = opts["op_types_to_quantize"]
    if opts["form"] == "dynamic":
        quantize_dynamic(str(prepared), str(target), **common)
        return
    quantize_static(str(prepared), str(target), Reader(), **common,
                    quant_format=QuantFormat.QOperator if opts["form"] == "qoperator" else QuantFormat.QDQ,
                    activation_type=QuantType[opts["activation_type"]],
                    calibrate_method=CalibrationMethod[opts["calibrate_method"]])


def onnxruntime_run(path: Path, feeds: dict, optimized: bool) -> list[np.ndarray]:
    import onnxruntime as ort
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def end_to_end(got: list[np.ndarray], want: list[np.ndarray], yardsticks: list[list[np.ndarray]] | None) -> str | None:
    """None when right; else what is off. `yardsticks`: runs whose deviation from `want` (the spec run)
    is the allowance (onnxruntime's int8 run, the spec graph quantizing with the converted file's
    arithmetic); None for dynamic quantization (float emulation: 1e-5 of the largest)."""
    for k, (ours, ref) in enumerate(zip(got, want)):
        ours, ref = np.asarray(ours, np.float64).reshape(ref.shape), ref.astype(np.float64)
        err = np.abs(ours - ref)
        floor = 1e-5 * np.abs(ref).max(initial=0)      # float rounding, as the dynamic check allows
        if yardsticks is None:
            if err.max(initial=0) > floor:
                return f"output {k} max {err.max():.3g} (max|ort| {np.abs(ref).max():.3g})"
            continue
        devs = [np.abs(y[k].astype(np.float64).reshape(ref.shape) - ref) for y in yardsticks]
        worst, mean = max(d.max(initial=0) for d in devs), max(d.mean() for d in devs)
        if err.max(initial=0) > max(1.5 * worst, floor) or err.mean() > max(5 * mean, floor):
            return f"output {k} max {err.max():.3g} mean {err.mean():.3g} vs yardsticks {worst:.3g} / {mean:.3g}"
    return None


def arithmetic_twin_run(spec_path: Path, feeds: dict) -> list[np.ndarray]:
    """The spec graph quantizing as the converted file does (tests/real_models/quantizer_twin.py), run
    by onnxruntime: the int8 layers' inputs by ncnn's rule, the emulated pairs by x * (1/s)."""
    from converter import convert
    from tests.real_models.quantizer_twin import ncnn_arithmetic_twin
    converted = convert(str(spec_path), input_shapes={k: list(v.shape) for k, v in feeds.items()})
    int8_nodes = {n.origin for n in converted.graph.nodes.values() if n.ncnn and n.params.get(8)}
    twin = spec_path.with_name(spec_path.stem + "_arithmetic.onnx")
    onnx.save(ncnn_arithmetic_twin(onnx.load(str(spec_path)), int8_nodes), str(twin))
    return onnxruntime_run(twin, feeds, False)


def judge(path: Path, feeds: dict, spec_path: Path | None, form: str) -> tuple[str, str]:
    """(status, detail) for one quantized model."""
    from converter import convert, verify
    from converter.ir import ConversionError
    from converter.ncnn_side.layout import to_ncnn
    from converter.ncnn_side.runtime import run_ncnn
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    try:
        converted = convert(str(path), input_shapes=shapes)
    except ConversionError as exc:
        text = str(exc).strip()
        return ("crash", f"refusal of several lines: {first_line(exc)}") if "\n" in text else ("refused", text)
    except Exception as exc:
        return "crash", f"converter: {first_line(exc)}"
    with tempfile.TemporaryDirectory() as tmp:
        param, bin_ = Path(tmp) / "m.param", Path(tmp) / "m.bin"
        io = converted.io()
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        names = [e["ncnn"] for e in io["outputs"]]
        try:
            converted.save(param, bin_)
            runs = {"ncnn": run_ncnn(param, bin_, ncnn_feeds, names),
                    "interpreter": converted.run(ncnn_feeds, layout="ncnn")}
        except Exception as exc:
            return "crash", first_line(exc)
    if form == "dynamic":
        want, yardsticks = onnxruntime_run(path, feeds, True), None
    else:
        want = onnxruntime_run(spec_path, feeds, False)
        try:
            own = onnxruntime_run(path, feeds, True)
        except Exception:       # its optimizer's fused kernels refuse some placements the plain ops take
            own = onnxruntime_run(path, feeds, False)
        try:
            yardsticks = [own, arithmetic_twin_run(spec_path, feeds)]
        except Exception:        # a twin of a graph the helper does not rewrite: onnxruntime's own run alone
            yardsticks = [own]
    if form != "dynamic":
        try:
            report = verify(str(path), inputs=feeds, backend="both")
        except Exception as exc:
            return "crash", f"verify: {first_line(exc)}"
        if not report.passed:
            d = report.divergences[0] if report.divergences else None
            what = d.describe() if d else "an output"
            return "wrong", f"per layer: {what}"[:300]
    int8 = f"int8 layers {converted.stats.get('int8_layers', 0)}"
    offs = {backend: end_to_end([got[n] for n in names], want, yardsticks) for backend, got in runs.items()}
    offs = {backend: off for backend, off in offs.items() if off}
    if offs:            # every layer within its step, the steps added up beyond the yardsticks
        return ("wrong" if form == "dynamic" else "drift"), f"{int8}; " + "; ".join(
            f"{backend} end to end: {off}" for backend, off in offs.items())
    return "pass", int8


def cell(model: str, config: str, folder: Path) -> tuple[str, str]:
    """(status, detail) of `model` quantized with `config`, its files written into `folder`."""
    source, feeds_of = model_source(model)
    calibration, feeds, opts = [feeds_of(seed) for seed in range(CALIBRATION_INPUTS)], feeds_of(99), options(config)
    target = folder / "q.onnx"
    try:
        quantize(source, target, opts, calibration)
        spec = target
        if opts["form"] == "qoperator":      # the QDQ twin: same options, the spec's Q/DQ graph
            spec = folder / "twin.onnx"
            quantize(source, spec, {**opts, "form": "qdq"}, calibration)
    except Exception as exc:
        return "skipped", f"onnxruntime cannot quantize: {first_line(exc)}"
    try:
        onnxruntime_run(target, feeds, False)
    except Exception as exc:
        return "skipped", f"onnxruntime cannot run it: {first_line(exc)}"
    return judge(target, feeds, spec, opts["form"])


def run(models: list[str], configs: list[str]) -> list[tuple[str, str, str, str]]:
    signal.signal(signal.SIGALRM, _timeout)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for config in configs:
                folder = Path(tmp) / model / config
                folder.mkdir(parents=True)
                signal.alarm(CELL_SECONDS)          # a conversion that hangs is a crash, not the end of the sweep
                try:
                    status, detail = cell(model, config, folder)
                except TimeoutError:
                    status, detail = "crash", f"no verdict within {CELL_SECONDS} s (a hang)"
                finally:
                    signal.alarm(0)
                rows.append((model, config, status, detail))
                print(*rows[-1], sep="\t", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated (default: {','.join(ZOO_MODELS)})")
    parser.add_argument("--configs", help=f"comma-separated (default: all {len(CONFIGS)})")
    parser.add_argument("--real", action="store_true", help=f"also {', '.join(REAL_MODELS)}' float sources")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else ZOO_MODELS + (REAL_MODELS if args.real else [])
    rows = run(models, args.configs.split(",") if args.configs else list(CONFIGS))
    counts = {}
    for _, _, status, _ in rows:
        counts[status] = counts.get(status, 0) + 1
    print("summary:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()

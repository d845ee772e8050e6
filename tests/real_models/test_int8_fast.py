"""Fast int8 (`--int8 fast`, passes/drop_activation_qdq.py) on the quantized real models, in the real ncnn and
the interpreter.

Fast mode drops the activation Q/DQ pairs that feed no int8 layer, so its outputs are no longer
onnxruntime's int8 values up to a step; they are the float model's computation with int8 only in the
int8 layers. The deviation allowed, derived from onnxruntime itself: the converted file's output is no
farther from the float model (the QDQ model without its activation pairs, so the same dequantized
weights; converter/verification/int8_fast.py) than onnxruntime's own int8 run of the QDQ model is (relative RMS over
the output, on an input that was not one of the calibration inputs). That distance is what quantizing
this model costs; a wrong scale, weight or placement lands beyond it. Measured (seed 99, real ncnn; the
interpreter within 2% of it): YOLOv8n 0.017 against onnxruntime's 0.057, PP-OCRv4 det 0.11 (0.96), rec
0.058 (0.30), ViT 0.0088 (0.042), BERT 0.010 (0.069) (before the convolutions summing at most 32 products
went float in fast mode: 0.042, 0.16, 0.087; YOLOv8n's DFL convolution, 16 products, was most of its). onnxruntime's
PP-OCR int8 maps are so far from float that its yardstick proves little there, so those are also read as
the application reads them, against the float model: det's text mask (> 0.3) on all but 1% of pixels,
rec's characters everywhere (the rule tests/real_models/test_quantized_models.py applies to exact mode).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from converter.verification.int8_fast import rel_rms, strip_activation_pairs
from onnx_cases import to_ncnn
from scripts.fetch_models import fetch
from scripts.quantize_models import calibration_feeds, quantized
from tests.real_models.test_quantized_models import _check_as_read

# int8 layers fast mode keeps (depthwise and row-wise InnerProducts run float there: apply_int8.py)
MIN_INT8_LAYERS = {"yolov8n_320_int8": 60, "ppocrv4_det_int8": 25, "ppocrv4_rec_int8": 8,
                   "vit_tiny_int8": 1, "bert_tiny_int8": 1}


def _onnxruntime(model, feeds: dict) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]).run(None, feeds)


def _fast_run(tmp_path, path: str, feeds: dict):
    converted = convert(path, input_shapes={k: list(v.shape) for k, v in feeds.items()}, int8="fast")
    param, bin_ = tmp_path / "fast.param", tmp_path / "fast.bin"
    converted.save(param, bin_)
    io = converted.io()
    ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
    outputs = [e["ncnn"] for e in io["outputs"]]
    got = {"ncnn": run_ncnn(param, bin_, ncnn_feeds, outputs), "interpreter": converted.run(ncnn_feeds, layout="ncnn")}
    return converted, {b: [r[o] for o in outputs] for b, r in got.items()}


def _emulated_pairs(converted) -> int:
    """Float QuantizeLinear chains left in the file: their UnaryOp round layers."""
    return sum(1 for n in converted.graph.nodes.values() if n.op == "UnaryOp" and n.params.get(0) == 18)


@pytest.mark.parametrize("name", list(MIN_INT8_LAYERS))
def test_fast_int8_real_model(tmp_path, name):
    path = str(quantized(name))
    feeds = calibration_feeds(name, seed=99)[0]          # not one of the calibration inputs
    converted, got = _fast_run(tmp_path, path, feeds)
    assert converted.stats["int8_mode"] == "fast"
    assert converted.stats["int8_layers"] >= MIN_INT8_LAYERS[name]
    assert len(converted.stats["int8_dropped"]) >= 50
    assert _emulated_pairs(converted) <= len(converted.graph.outputs)      # at most a graph output's own pair
    qdq = onnx.load(path)
    int8, floats = _onnxruntime(qdq, feeds), _onnxruntime(strip_activation_pairs(qdq), feeds)
    for backend, results in got.items():
        for k, (ours, spec, want) in enumerate(zip(results, int8, floats)):
            allowed = rel_rms(spec, want)
            assert allowed > 0, (name, k)
            assert rel_rms(ours.reshape(want.shape), want) <= allowed, (name, backend, k, allowed)
            if name.startswith("ppocr"):      # onnxruntime's int8 maps are far off (det 0.96): read as the app does
                _check_as_read(name, ours.reshape(want.shape), want, (name, backend, k))


def test_fast_int8_uint8_activations_smart_turn(tmp_path):
    """Smart-Turn v3.2 ships QDQ with uint8 activations (zero points), which ncnn's symmetric int8 cannot
    take: in fast mode every pair is dropped, so the file is the float model over its dequantized weights,
    far closer to it than onnxruntime's int8 run."""
    path = str(fetch("smart_turn_v3"))
    x = np.random.default_rng(5).normal(0, 0.3, (1, 80, 800)).astype(np.float32)
    converted, got = _fast_run(tmp_path, path, {"input_features": x})
    assert len(converted.stats["int8_dropped"]) >= 20
    assert _emulated_pairs(converted) <= len(converted.graph.outputs)
    qdq = onnx.load(path)
    int8, floats = _onnxruntime(qdq, {"input_features": x}), _onnxruntime(strip_activation_pairs(qdq), {"input_features": x})
    for backend, (ours,) in got.items():
        allowed = rel_rms(int8[0], floats[0])
        assert rel_rms(ours.reshape(floats[0].shape), floats[0]) <= allowed, (backend, allowed)


def test_fast_keeps_exact_modes_int8_layers_but_where_slower(tmp_path):
    """Fast mode's int8 layers are exact mode's with the same weights and scales; those it leaves float are
    each listed with a fast-mode reason (YOLOv8n: its 3-channel stem, and the two convolutions summing at most
    32 products per output: a 1x1 over 32 channels and the DFL's over 16), and only float layers are dropped."""
    path = str(quantized("yolov8n_320_int8"))
    exact, fast = convert(path, int8="exact"), convert(path, int8="fast")

    def int8_layers(model):
        return {n.origin: [np.asarray(w).tobytes() for w in n.weights]
                for n in model.graph.nodes.values() if n.ncnn and n.params.get(8)}
    exact_layers, fast_layers = int8_layers(exact), int8_layers(fast)
    assert fast_layers == {k: v for k, v in exact_layers.items() if k in fast_layers}
    left_float = set(exact_layers) - set(fast_layers)
    assert left_float and all(fast.stats["int8_fallbacks"][k].startswith("fast mode:") for k in left_float)
    assert left_float == {"/model.0/conv/Conv", "/model.2/cv1/conv/Conv", "/model.22/dfl/conv/Conv"}
    assert len(fast.graph.nodes) < len(exact.graph.nodes) / 2

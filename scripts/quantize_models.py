"""Quantized versions of real models, made with onnxruntime's quantize_static, into the model cache.

    python scripts/quantize_models.py [NAME ...]     # prints each quantized model's cached path

QDQ format, int8 weights per output channel, symmetric int8 activations (zero point 0), the
form ncnn's int8 layers take; `*_qop_*` the same quantization in QOperator format (QLinearConv,
com.microsoft QLinearAdd, QGemm, ...; `uint8`: quantize_static's default uint8 activations with
zero points); `*_dynamic` quantize_dynamic's DynamicQuantizeLinear + MatMulInteger (no calibration, 7-bit weights). Calibration runs a few realistic inputs (a synthetic text page
for the OCR models, smooth photo-like images for the detector and the ViT, short token runs for
BERT), fixed by seed, so a rebuild gives the same file. Only onnxruntime is needed (no torch).
The file is written whole or not at all, into <cache>/quantized/<name>.onnx.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import version_converter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.fetch_models import cache_dir, fetch  # noqa: E402

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def text_page(shape, rng) -> np.ndarray:
    """A white page with dark glyph-like strokes in lines, normalized as PP-OCR does."""
    _, _, h, w = shape
    img = np.ones((h, w, 3), np.float32)
    for _ in range(max(1, h * w // 2000)):
        y, x = rng.integers(2, max(3, h - 12)), rng.integers(1, max(2, w - 60))
        for k in range(8):
            img[y:y + 10, x + 7 * k:x + 7 * k + 3] = rng.uniform(0.0, 0.3)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    return ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def photo(shape, rng) -> np.ndarray:
    """Smooth colour fields with a few shapes, in [0, 1]: what a preprocessed photo looks like."""
    _, c, h, w = shape
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    img = np.stack([0.5 + 0.4 * np.sin(rng.uniform(1, 6) * xx + rng.uniform(1, 6) * yy + rng.uniform(0, 6))
                    for _ in range(c)])
    for _ in range(4):
        y0, x0 = rng.integers(0, h // 2), rng.integers(0, w // 2)
        img[:, y0:y0 + h // 4, x0:x0 + w // 4] = rng.uniform(0, 1, (c, 1, 1))
    return img[None].astype(np.float32)


def tokens(rng) -> dict[str, np.ndarray]:
    return {"input_ids": rng.integers(1, 50, (1, 8)).astype(np.int64),
            "attention_mask": np.ones((1, 8), np.int64)}


@dataclass(frozen=True)
class Quantized:
    name: str
    source: Callable[[], Path]
    feeds: Callable[[np.random.Generator], dict]
    form: str = "qdq"               # "qdq", "qoperator" or "dynamic"
    activations: str = "int8"       # "int8" (symmetric) or "uint8" (zero points, quantize_static's default)


def _like(base: "Quantized", name: str, **changes) -> "Quantized":
    """Another quantization of `base`'s model with its calibration inputs."""
    return Quantized(name, base.source, base.feeds, **changes)


_YOLO = Quantized("yolov8n_320_int8", lambda: fetch("yolov8n_320"),
                  lambda rng: {"images": photo((1, 3, 320, 320), rng)})
_DET = Quantized("ppocrv4_det_int8", lambda: fetch("ppocrv4_det"), lambda rng: {"x": text_page((1, 3, 96, 128), rng)})
_REC = Quantized("ppocrv4_rec_int8", lambda: fetch("ppocrv4_rec"), lambda rng: {"x": text_page((1, 3, 48, 160), rng)})
_VIT = Quantized("vit_tiny_int8", lambda: MODELS_DIR / "vit_tiny.onnx",
                 lambda rng: {"pixel_values": (photo((1, 3, 32, 32), rng) - 0.5) / 0.5})
_BERT = Quantized("bert_tiny_int8", lambda: MODELS_DIR / "bert_tiny.onnx", tokens)


def _bench_cnn(name: str) -> Path:
    """A torchvision CNN scripts/export_bench_cnns.py exported (with the tools venv) into the cache."""
    path = cache_dir() / "bench" / f"{name}.onnx"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run /work/zoo-venv/bin/python -m scripts.export_bench_cnns first")
    return path


def imagenet(shape, rng) -> np.ndarray:
    mean, std = np.array([0.485, 0.456, 0.406])[:, None, None], np.array([0.229, 0.224, 0.225])[:, None, None]
    return ((photo(shape, rng) - mean) / std).astype(np.float32)


_MOBILENET = Quantized("mobilenet_v2_224_int8", lambda: _bench_cnn("mobilenet_v2_224"),
                       lambda rng: {"x": imagenet((1, 3, 224, 224), rng)})
_RESNET = Quantized("resnet18_224_int8", lambda: _bench_cnn("resnet18_224"),
                    lambda rng: {"x": imagenet((1, 3, 224, 224), rng)})
QUANTIZED = {q.name: q for q in [
    _YOLO, _DET, _REC, _VIT, _BERT, _MOBILENET, _RESNET,
    _like(_YOLO, "yolov8n_320_qop_int8", form="qoperator"),
    _like(_YOLO, "yolov8n_320_qop_uint8", form="qoperator", activations="uint8"),
    _like(_YOLO, "yolov8n_320_uint8", activations="uint8"),
    _like(_DET, "ppocrv4_det_qop_int8", form="qoperator"),
    _like(_REC, "ppocrv4_rec_qop_int8", form="qoperator"),
    _like(_VIT, "vit_tiny_qop_int8", form="qoperator"),
    _like(_VIT, "vit_tiny_dynamic", form="dynamic"),
    _like(_BERT, "bert_tiny_dynamic", form="dynamic"),
]}
# a QOperator model's QDQ twin: the same calibration and options, written as the spec's Q/DQ graph
QDQ_TWIN = {"yolov8n_320_qop_int8": "yolov8n_320_int8", "yolov8n_320_qop_uint8": "yolov8n_320_uint8",
            "ppocrv4_det_qop_int8": "ppocrv4_det_int8", "ppocrv4_rec_qop_int8": "ppocrv4_rec_int8",
            "vit_tiny_qop_int8": "vit_tiny_int8"}
CALIBRATION_INPUTS = 4


def calibration_feeds(name: str, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [QUANTIZED[name].feeds(rng) for _ in range(CALIBRATION_INPUTS)]


def _at_least_opset13(source: Path, tmp: Path) -> Path:
    """Per-channel Q/DQ (their axis attribute) needs opset 13; PP-OCR's paddle2onnx files are 12."""
    model = onnx.load(str(source))
    if next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= 13:
        return source
    upgraded = tmp / "opset13.onnx"
    onnx.save(version_converter.convert_version(model, 13), str(upgraded))
    return upgraded


def _quantize(spec: Quantized, source: Path, target: Path, feeds: list[dict]) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(feeds)

        def get_next(self):
            return next(self.items, None)

    with tempfile.TemporaryDirectory() as tmp:
        partial, prepared = Path(tmp) / target.name, Path(tmp) / "prepared.onnx"
        # onnxruntime's recommended pre-processing: shape inference and graph optimization (folds
        # BatchNorm into Conv; quantizing an unfolded BatchNorm wrecked PP-OCR det's output)
        quant_pre_process(str(_at_least_opset13(source, Path(tmp))), str(prepared), skip_symbolic_shape=True)
        symmetric = spec.activations == "int8"
        if spec.form == "dynamic":
            # 7-bit weights (reduce_range): onnxruntime's x86 uint8 x int8 kernel without VNNI adds products
            # in pairs into int16, and 8-bit weights saturate it (its run is then not the integer sum)
            quantize_dynamic(str(prepared), str(partial), weight_type=QuantType.QInt8, reduce_range=True)
        else:
            quantize_static(str(prepared), str(partial), Reader(), per_channel=True, weight_type=QuantType.QInt8,
                            quant_format=QuantFormat.QOperator if spec.form == "qoperator" else QuantFormat.QDQ,
                            activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
                            extra_options={"ActivationSymmetric": symmetric, "WeightSymmetric": True})
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_suffix(".part")
        staged.write_bytes(partial.read_bytes())
        staged.replace(target)


def quantized(name: str) -> Path:
    """The cached quantized model `name`, made on the first call."""
    target = cache_dir() / "quantized" / f"{name}.onnx"
    if not target.is_file():
        _quantize(QUANTIZED[name], QUANTIZED[name].source(), target, calibration_feeds(name))
    return target


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Quantize real models into the cache; print each one's path.")
    parser.add_argument("names", nargs="*", help=f"model names (default: all {len(QUANTIZED)})")
    for model in parser.parse_args().names or list(QUANTIZED):
        print(f"{model}\t{quantized(model)}")

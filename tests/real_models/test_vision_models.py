"""Real vision models from the packages that ship them (scripts/fetch_models.py), in the real ncnn
and the interpreter against onnxruntime; dynamic models at two sizes from one conversion."""
import pytest

from .real_check import check_real_model


@pytest.mark.parametrize("name", ["light_densenet121", "light_inception_v2", "light_resnet50", "light_shufflenet",
                                  "light_vgg19"])
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
    for size in (320, 256):
        shape = {"images": [1, 3, size, size]}
        check_real_model("yolov8n_320", [shape], tmp_path, input_shapes=shape)


def test_yolov8n_every_blob_through_verify():
    """Not only the outputs: every blob that carries an ONNX tensor agrees with onnxruntime, in both backends."""
    from converter import verify
    from scripts.fetch_models import fetch
    report = verify(fetch("yolov8n_320"), input_shapes={"images": [1, 3, 320, 320]}, backend="both")
    failed = [(row.backend, row.layer, row.rel_to_max) for row in report.layers if not row.passed]
    assert report.passed and len(report.layers) > 300 and not failed, failed[:5]


def test_ppocrv4_rec_two_widths_from_one_file(tmp_path):
    """Its attention reshapes read the width at run time: ncnn Reshape 6= expressions, not --input-shape."""
    check_real_model("ppocrv4_rec", [{"x": [1, 3, 48, 320]}, {"x": [1, 3, 48, 200]}], tmp_path,
                     input_shapes={"x": [1, 3, 48, None]})

"""Nearest Resize modes whose source pixels ncnn's Interp picks with a scale other than ONNX's
(converter/lowering/resize_nearest.py): real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def nearest_model(shape, transform, nearest_mode, scales=None, sizes=None):
    inputs, inits = ["x", ""], []
    if scales is not None:
        inputs.append("scales")
        inits.append(("scales", np.array([1, 1, *scales], np.float32)))
    else:
        inputs += ["", "sizes"]
        inits.append(("sizes", np.array([shape[0], shape[1], *sizes], np.int64)))
    node = helper.make_node("Resize", inputs, ["y"], name="resize", mode="nearest",
                            coordinate_transformation_mode=transform, nearest_mode=nearest_mode)
    return make_model([node], [("x", shape)], [("y", None)], inits)


# each was refused before the fitted scale (ONNX's own scale picks other pixels in ncnn)
CASES = {
    "half_pixel_floor_x2": ((1, 2, 6, 8), "half_pixel", "floor", None, (12, 16)),
    "half_pixel_floor_x1.5": ((1, 2, 6, 8), "half_pixel", "floor", None, (9, 12)),
    "pytorch_half_pixel_floor_scale2": ((1, 2, 6, 8), "pytorch_half_pixel", "floor", (2.0, 2.0), None),
    "align_corners_floor_x2": ((1, 2, 6, 8), "align_corners", "floor", None, (12, 16)),
    "half_pixel_symmetric_floor_x3": ((1, 2, 6, 8), "half_pixel_symmetric", "floor", None, (18, 24)),
    "align_corners_floor_mixed": ((1, 2, 5, 7), "align_corners", "floor", None, (10, 9)),
}


@pytest.mark.parametrize("name", CASES)
def test_fitted_scale_in_real_ncnn(name, tmp_path):
    shape, transform, nearest_mode, scales, sizes = CASES[name]
    model = nearest_model(shape, transform, nearest_mode, scales, sizes)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    interp = [n for n in converted.graph.topological() if n.op == "Interp"]
    assert len(interp) == 1 and interp[0].params[0] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_offset_sources_run_as_one_hot_products(tmp_path):
    """half_pixel downscale by 3 with round_prefer_floor takes pixel 3x+1: no Interp step starts at 1,
    so onnxruntime's one-hot matrices are applied (resize_products.py), bit for bit."""
    model = nearest_model((1, 2, 6, 9), "half_pixel", "round_prefer_floor", scales=(1 / 3, 1 / 3))
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert [n.op for n in converted.graph.topological()].count("MatMul") == 2
    assert "Interp" not in [n.op for n in converted.graph.topological()]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_onnxruntime_pixels_and_a_warning_where_the_spec_picks_others(tmp_path):
    """asymmetric floor 80 -> 24 (torch's F.interpolate export): onnxruntime's float32 9 / 0.3f
    floors to 29, the spec (and torch, and ncnn's Interp) read 30. onnxruntime is the reference:
    its one-hot rows run bit for bit, and one warning line names the node and output 9."""
    model = nearest_model((1, 2, 4, 80), "asymmetric", "floor", sizes=(4, 24))
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert "Interp" not in [n.op for n in converted.graph.topological()]
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    warned = [w for w in converted.graph.warnings if "ONNX spec" in w]
    assert warned == ["Resize node 'resize': mode nearest, coordinate_transformation_mode asymmetric resizing axis 3 "
                      "80 -> 24: converted to onnxruntime's pixels; output 9 reads pixel 29 in onnxruntime, 30 in "
                      "the ONNX spec (and torch)"]


def test_no_warning_where_onnxruntime_and_the_spec_agree(tmp_path):
    model = nearest_model((1, 2, 6, 9), "half_pixel", "round_prefer_floor", scales=(1 / 3, 1 / 3))
    assert not [w for w in convert(model).graph.warnings if "ONNX spec" in w]


def test_linear_weights_that_differ_from_the_spec_stay_refused():
    """Only nearest sources are converted to onnxruntime's choice; linear weights that part stay refused
    (align_corners with a scale whose product is not whole)."""
    inits = [("scales", np.array([1, 1, 1, 2.5], np.float32))]
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="linear",
                            coordinate_transformation_mode="align_corners")
    with pytest.raises(ConversionError, match="ONNX spec") as info:
        convert(make_model([node], [("x", (1, 2, 4, 5))], [("y", None)], inits))
    assert "\n" not in str(info.value)

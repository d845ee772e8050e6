"""Resize/Upsample -> Interp: every accepted mode matches onnxruntime in the real ncnn; the rest is refused."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

SHAPE = [1, 3, 5, 7]


def resize_model(scales=None, sizes=None, shape=SHAPE, opset=13, **attrs):
    inputs = ["x", "roi", "scales"] + (["sizes"] if sizes is not None else [])
    inits = [("roi", np.zeros(0, np.float32)), ("scales", np.array(scales or [], np.float32))]
    if sizes is not None:
        inits.append(("sizes", np.array(sizes, np.int64)))
    return make_model([helper.make_node("Resize", inputs, ["y"], **attrs)], [("x", shape)], [("y", None)],
                      inits, opset=opset)


NEAREST_OK = [
    ([1, 1, 2, 2], "asymmetric", "floor"),
    ([1, 1, 3, 2], "asymmetric", "floor"),
    ([1, 1, 2, 4], "half_pixel", "round_prefer_floor"),
    ([1, 1, 3, 3], "half_pixel", "round_prefer_ceil"),
    ([1, 1, 2, 2], "pytorch_half_pixel", "round_prefer_floor"),
    ([1, 1, 0.5, 0.5], "asymmetric", "floor"),
    ([1, 1, 1.5, 1.5], "half_pixel", "round_prefer_floor"),
]


@pytest.mark.parametrize("scales, ctm, nearest_mode", NEAREST_OK)
def test_nearest_modes_ncnn_reproduces(tmp_path, scales, ctm, nearest_mode):
    shape = [1, 3, 8, 6] if scales[2] < 1 else SHAPE
    model = resize_model(scales, shape=shape, mode="nearest", coordinate_transformation_mode=ctm,
                         nearest_mode=nearest_mode)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted) == ["Input", "Interp"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("scales, ctm, nearest_mode", [
    ([1, 1, 2, 2], "asymmetric", "round_prefer_ceil"),       # 0.5 rounds up: picks the next pixel
    ([1, 1, 2, 2], "asymmetric", "ceil"),
    ([1, 1, 0.5, 0.5], "half_pixel", "round_prefer_ceil"),   # 2dx + 0.5 rounds to 2dx + 1
    ([1, 1, 2, 2], "align_corners", "round_prefer_floor"),
])
def test_nearest_modes_ncnn_cannot_reproduce_are_refused(scales, ctm, nearest_mode):
    model = resize_model(scales, mode="nearest", coordinate_transformation_mode=ctm, nearest_mode=nearest_mode)
    with pytest.raises(ConversionError, match="nearest resize"):
        convert(model)


@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "align_corners"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 1.5, 2.5], [1, 1, 0.5, 0.5]])
def test_linear_with_scales(tmp_path, ctm, scales):
    shape = [1, 3, 8, 6] if scales[2] < 1 else SHAPE
    model = resize_model(scales, shape=shape, mode="linear", coordinate_transformation_mode=ctm)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("mode, ctm", [("linear", "half_pixel"), ("linear", "align_corners"),
                                       ("cubic", "half_pixel")])
def test_sizes(tmp_path, ctm, mode):
    model = resize_model(sizes=[1, 3, 9, 11], mode=mode, coordinate_transformation_mode=ctm)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_cubic_with_scales(tmp_path):
    model = resize_model([1, 1, 2, 2], mode="cubic", coordinate_transformation_mode="half_pixel")
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("attrs, why", [
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, "half_pixel and align_corners"),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, "a = -0.75"),
    ({"mode": "cubic", "coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.5}, "a = -0.75"),
])
def test_other_interpolations_are_refused(attrs, why):
    with pytest.raises(ConversionError, match=why):
        convert(resize_model([1, 1, 2, 2], **attrs))


def test_channel_scale_is_refused():
    with pytest.raises(ConversionError, match="batch or channel"):
        convert(resize_model([1, 2, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric",
                             nearest_mode="floor"))


def test_one_file_at_many_sizes(tmp_path):
    """Constant scales: the same Interp serves any input size."""
    from onnx_cases import assert_one_file_many_sizes
    model = resize_model([1, 1, 2, 2], shape=[1, 3, "H", "W"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    assert_one_file_many_sizes(model, tmp_path, [(4, 5), (9, 3)])


def test_upsample_opset9(tmp_path):
    model = make_model([helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")], [("x", SHAPE)],
                       [("y", None)], [("s", np.array([1, 1, 2, 3], np.float32))], opset=9)
    check_in_ncnn(model, tmp_path)

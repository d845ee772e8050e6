"""Resize -> Interp: every mode either runs in real ncnn with onnxruntime's numbers or is refused.

Each case converts, and then either the real ncnn matches onnxruntime within 1e-5
(relative) or the conversion raised a one-line ConversionError naming the node and
the mode. Which of the two happens is the converter's computed decision; the
`expected` column pins the decisions measured in this project, so a change shows.
"""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]
SCALES = [(2.0, 2.0), (0.5, 0.5), (1.5, 2.5)]


def resize_model(shape, scales=None, sizes=None, opset=13, axes=None, **attrs):
    inputs, inits = ["x", ""], []
    if scales is not None:
        inputs.append("scales")
        inits.append(("scales", np.array(scales, np.float32)))
    else:
        inputs += ["", "sizes"]
        inits.append(("sizes", np.array(sizes, np.int64)))
    if axes is not None:
        attrs["axes"] = axes
    node = helper.make_node("Resize", inputs, ["y"], name="resize", **attrs)
    return make_model([node], [("x", shape)], [("y", None)], inits, opset=opset)


def converts_exactly(model, tmp_path, interpreter: bool = False, **kwargs):
    """True: the real ncnn reproduces onnxruntime (with Interp, or onnxruntime's own matrices as
    products: resize_products.py). False: a clear refusal. Anything else fails.
    With `interpreter`, the interpreter must also agree with the real ncnn on the converted model."""
    try:
        converted = check_in_ncnn(model, tmp_path, rtol=1e-5, atol=1e-5, **kwargs)
    except ConversionError as exc:
        message = str(exc)
        assert "Resize node" in message and "\n" not in message, message
        return False
    assert {"Interp", "MatMul", "Gemm", "InnerProduct"} & set(ncnn_layer_types(converted))
    if interpreter:
        check_interpreter_matches_ncnn(converted, model, tmp_path)
    return True


@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
def test_nearest(tmp_path, nearest_mode, transform, scale):
    model = resize_model([1, 2, 5, 6], scales=[1, 1, *scale], mode="nearest",
                         coordinate_transformation_mode=transform, nearest_mode=nearest_mode)
    converts_exactly(model, tmp_path)


@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_linear_and_cubic(tmp_path, mode, transform, scale):
    model = resize_model([1, 2, 5, 6], scales=[1, 1, *scale], mode=mode,
                         coordinate_transformation_mode=transform)
    converts_exactly(model, tmp_path)


@pytest.mark.parametrize("mode,transform,expected", [
    ("nearest", "asymmetric", True), ("linear", "half_pixel", True), ("linear", "align_corners", True),
    ("cubic", "half_pixel", True), ("cubic", "align_corners", True), ("linear", "asymmetric", True)])
def test_known_decisions(tmp_path, mode, transform, expected):
    model = resize_model([1, 2, 5, 6], scales=[1, 1, 3, 1], mode=mode, coordinate_transformation_mode=transform,
                         nearest_mode="floor")
    assert converts_exactly(model, tmp_path, interpreter=True) is expected


@pytest.mark.parametrize("sizes", [[1, 2, 10, 12], [1, 2, 8, 7], [1, 2, 3, 4], [1, 2, 5, 9]], ids=str)
@pytest.mark.parametrize("mode,transform", [("nearest", "asymmetric"), ("nearest", "half_pixel"),
                                            ("linear", "half_pixel"), ("linear", "align_corners"),
                                            ("linear", "pytorch_half_pixel"), ("cubic", "half_pixel")])
def test_sizes(tmp_path, mode, transform, sizes):
    model = resize_model([1, 2, 5, 6], sizes=sizes, mode=mode, coordinate_transformation_mode=transform,
                         nearest_mode="floor")
    converts_exactly(model, tmp_path)


def test_cubic_coeff_a_other_than_ncnns_runs_as_products(tmp_path):
    model = resize_model([1, 2, 5, 6], scales=[1, 1, 2, 2], mode="cubic", cubic_coeff_a=-0.5)
    assert converts_exactly(model, tmp_path, interpreter=True)
    assert "Interp" not in ncnn_layer_types(convert(model))


@pytest.mark.parametrize("exclude_outside", [0, 1])
def test_cubic_exclude_outside(tmp_path, exclude_outside):
    model = resize_model([1, 2, 5, 6], scales=[1, 1, 2, 2], mode="cubic", exclude_outside=exclude_outside)
    assert converts_exactly(model, tmp_path)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_keep_aspect_ratio_policy(tmp_path, policy):
    model = resize_model([1, 2, 5, 6], sizes=[10, 9], axes=[2, 3], opset=18, mode="nearest",
                         keep_aspect_ratio_policy=policy, coordinate_transformation_mode="asymmetric",
                         nearest_mode="floor")
    converts_exactly(model, tmp_path)


@pytest.mark.parametrize("opset", [18, 19])
def test_axes_attribute(tmp_path, opset):
    model = resize_model([1, 2, 5, 6], scales=[2.0, 2.0], axes=[2, 3], opset=opset, mode="linear")
    assert converts_exactly(model, tmp_path)


@pytest.mark.parametrize("shape,scales,mode", [
    ([1, 3, 8], [1, 1, 2], "nearest"),             # 1-D spatial: a 2-D blob, Interp resizes w
    ([1, 3, 8], [1, 1, 2], "linear"),
    ([1, 8], [1, 2], "nearest"),                    # a 1-D blob viewed as [w, 1]
    ([1, 2, 3, 4, 6], [1, 1, 1, 2, 2], "linear"),   # 3-D data, only h and w resized: viewed as 3-D
    ([1, 2, 3, 4, 6], [1, 1, 1, 1, 2], "nearest"),
    ([1, 2, 5, 6], [1, 1, 1, 2], "linear"),         # w only on a 3-D blob
    ([1, 2, 5, 6], [1, 1, 2, 1], "nearest"),        # h only
], ids=str)
def test_layouts(tmp_path, shape, scales, mode):
    model = resize_model(shape, scales=scales, mode=mode, coordinate_transformation_mode="half_pixel")
    assert converts_exactly(model, tmp_path, interpreter=True)


@pytest.mark.parametrize("shape,scales,why", [
    ([1, 2, 5, 6], [1, 2, 1, 1], "innermost two"),   # channels
    ([2, 2, 5, 6], [2, 1, 1, 1], "innermost two"),   # a batch of 2 is a 4-D blob
    ([1, 2, 3, 4, 6], [1, 1, 2, 2, 2], "innermost two"),
])
def test_unsupported_axes_are_refused(tmp_path, shape, scales, why):
    model = resize_model(shape, scales=scales, mode="nearest")
    with pytest.raises(ConversionError, match=why):
        check_in_ncnn(model, tmp_path)


def test_runtime_sizes_are_refused(tmp_path):
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", mode="nearest")
    model = make_model([node], [("x", [1, 2, 5, 6])], [("y", [1, 2, 10, 12])])
    model.graph.input.append(helper.make_tensor_value_info("sizes", TensorProto.INT64, [4]))
    with pytest.raises(ConversionError, match="sizes are computed at run time"):
        convert(model)


@pytest.mark.parametrize("scale", [2.0, 4.0, 8.0, 3.0, 1.5])
@pytest.mark.parametrize("mode,transform", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                            ("linear", "align_corners")])
def test_dynamic_extents(tmp_path, mode, transform, scale):
    """Unknown H and W: one file for every size (checked here at two)."""
    model = resize_model([1, 2, "H", "W"], scales=[1, 1, scale, scale], mode=mode, nearest_mode="floor",
                         coordinate_transformation_mode=transform)
    if converts_exactly(model, tmp_path, interpreter=True, dims={"H": 5, "W": 7}):
        check_in_ncnn(model, tmp_path, dims={"H": 9, "W": 4}, rtol=1e-5, atol=1e-5)
    elif mode == "nearest" or scale.is_integer():
        pytest.fail("integer-scale and nearest-asymmetric resizes of unknown extent should convert")


@pytest.mark.parametrize("op,opset,mode,scales", [
    ("Upsample", 9, "nearest", [1, 1, 2, 2]), ("Upsample", 9, "linear", [1, 1, 2, 2]),
    ("Upsample", 7, "nearest", [1, 1, 3, 2]), ("Upsample", 7, "linear", [1, 1, 2, 3]),
    ("Resize", 10, "nearest", [1, 1, 2, 2]), ("Resize", 10, "nearest", [1, 1, 0.5, 0.5]),
    ("Resize", 10, "linear", [1, 1, 2, 2]),
], ids=str)
def test_legacy_upsample_and_resize10_keep_asymmetric(tmp_path, op, opset, mode, scales):
    """onnx's version converter drops the old asymmetric rule; the loader writes it back, so
    the converted model computes what onnxruntime computes on the original opset."""
    if opset == 7:
        node = helper.make_node(op, ["x"], ["y"], name="resize", mode=mode, scales=[float(s) for s in scales])
        inits = []
    else:
        node = helper.make_node(op, ["x", "scales"], ["y"], name="resize", mode=mode)
        inits = [("scales", np.array(scales, np.float32))]
    model = make_model([node], [("x", [1, 2, 4, 6])], [("y", None)], inits, opset=opset)
    converted = converts_exactly(model, tmp_path)
    assert converted or mode == "linear"      # asymmetric linear is refused, never half_pixel


@pytest.mark.parametrize("axes", [[7, 3], [-5], [3, -1]])
def test_axes_outside_the_rank_or_repeated_are_refused(axes):
    """Invalid, but onnx's shape inference lets them through: 7 must not wrap around to axis 3."""
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", axes=axes, mode="nearest")
    model = make_model([node], [("x", [1, 2, 5, 6])], [("y", [1, 2, 5, 12])],
                       [("scales", np.full(len(axes), 2.0, np.float32))], opset=18)
    with pytest.raises(ConversionError, match=r"Resize node 'resize' .*axes .* are not distinct axes of a rank-4"):
        convert(model)

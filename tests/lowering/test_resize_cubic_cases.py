"""Generated cubic Resize cases (sizes, scales up and down, every coordinate transform ncnn might
take): each one is refused in one line, or real ncnn and the interpreter compute what
onnxruntime computes and what the ONNX reference (the spec, which the node tests' expected
numbers come from) computes. Where those two references part, the conversion must refuse."""
import itertools

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from converter import convert
from converter.ir import ConversionError
from onnx_cases import make_model, onnxruntime_outputs, random_inputs, run_converted_in_ncnn, to_ncnn

TRANSFORMS = ["align_corners", "half_pixel", "pytorch_half_pixel", "asymmetric"]
SHAPES = [(1, 1, 4, 4), (1, 2, 5, 7), (1, 1, 9, 6)]
SCALES = [(0.8, 0.8), (0.5, 0.5), (2.0, 2.0), (1.5, 3.0), (0.6, 1.4), (1.0, 0.75)]
SIZES = [(3, 3), (8, 11), (2, 9)]


def _model(shape, transform, scales=None, sizes=None, a=-0.75):
    node = helper.make_node("Resize", ["x", "", "scales" if sizes is None else "", *(["sizes"] if sizes else [])],
                            ["y"], mode="cubic", coordinate_transformation_mode=transform, cubic_coeff_a=a)
    const = [("scales", np.array([1, 1, *scales], np.float32))] if sizes is None else \
        [("sizes", np.array([*shape[:2], *sizes], np.int64))]
    return make_model([node], [("x", shape)], [("y", None)], const, opset=19)


def _references_agree(model, feeds) -> bool:
    ort = onnxruntime_outputs(model, feeds)["y"]
    spec = ReferenceEvaluator(model).run(None, feeds)[0]
    return ort.shape == spec.shape and np.allclose(ort, spec, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transform,shape", list(itertools.product(TRANSFORMS, SHAPES)), ids=str)
def test_cubic_resize_converts_right_or_refuses(tmp_path, transform, shape):
    targets = [dict(scales=s) for s in SCALES] + [dict(sizes=s) for s in SIZES]
    converted_count = 0
    for target in targets:
        model = _model(shape, transform, **target)
        feeds = random_inputs(model)
        try:
            converted, got = run_converted_in_ncnn(model, feeds, tmp_path)
        except ConversionError as exc:
            assert "\n" not in str(exc)
            continue
        assert _references_agree(model, feeds), f"{target}: converted where onnxruntime and the spec part"
        want = onnxruntime_outputs(model, feeds)["y"]
        np.testing.assert_allclose(got["y"].reshape(want.shape), want, rtol=1e-3, atol=1e-4, err_msg=str(target))
        io = converted.io()
        ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]})
        np.testing.assert_allclose(ours[io["outputs"][0]["ncnn"]].reshape(want.shape), want,
                                   rtol=1e-3, atol=1e-4, err_msg=str(target))
        converted_count += 1
    assert converted_count >= 3 or transform == "asymmetric"     # ncnn has no asymmetric cubic


@pytest.mark.parametrize("transform,scales,refused", [
    ("align_corners", (0.8, 0.8), True), ("align_corners", (0.6, 1.4), True),
    ("align_corners", (2.0, 2.0), False), ("align_corners", (0.5, 0.5), False),
    ("pytorch_half_pixel", (1.0, 0.3), True), ("pytorch_half_pixel", (0.8, 0.8), False)])
def test_fractional_length_is_refused_where_references_part(transform, scales, refused):
    """The node test resize_downsample_scales_cubic_align_corners: 4 * 0.8 = 3.2 in the spec, 3 in
    onnxruntime; pytorch_half_pixel parts at 4 * 0.3 = 1.2 (the spec's length > 1, onnxruntime's 1)."""
    model = _model((1, 1, 4, 4), transform, scales=scales)
    assert _references_agree(model, random_inputs(model)) is not refused
    if refused:
        with pytest.raises(ConversionError, match=f"{transform} with scale .* ONNX spec resizes to a length"):
            convert(model)
    else:
        convert(model)


def test_cubic_coeff_a_other_than_ncnn_is_refused():
    with pytest.raises(ConversionError, match="cubic_coeff_a -0.5"):
        convert(_model((1, 1, 4, 4), "half_pixel", scales=(2.0, 2.0), a=-0.5))

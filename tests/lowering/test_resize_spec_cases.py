"""Generated Resize cases (cubic, linear and nearest; sizes, scales up and down, scales that keep
an extent; every coordinate transform ncnn might take): each one is refused in one line, or real
ncnn and the interpreter compute what onnxruntime computes and what the ONNX reference (the spec,
which the node tests' expected numbers come from) computes. Where those two references part, the
conversion must refuse, except for nearest source pixels: there onnxruntime, the project's reference,
is followed and the conversion warns, naming the node and the spec's pixel."""
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from converter import convert
from converter.ir import ConversionError
from onnx_cases import make_model, onnxruntime_outputs, random_inputs, run_converted_in_ncnn, to_ncnn

TRANSFORMS = ["align_corners", "half_pixel", "pytorch_half_pixel", "asymmetric"]
SHAPES = [(1, 1, 4, 4), (1, 2, 5, 7), (1, 1, 9, 6), (1, 1, 3, 1)]
SCALES = [(0.8, 0.8), (0.5, 0.5), (2.0, 2.0), (1.5, 3.0), (0.6, 1.4), (1.0, 0.75), (1.3, 1.0), (0.3, 2.0)]
SIZES = [(3, 3), (8, 11), (2, 9), (1, 4)]
# how many of each mode's targets ncnn computes at least, per shape: the test is not vacuous
MIN_CONVERTED = {("cubic", "asymmetric"): 0, ("linear", "asymmetric"): 0}


def _model(shape, transform, scales=None, sizes=None, a=-0.75, mode="cubic"):
    node = helper.make_node("Resize", ["x", "", "scales" if sizes is None else "", *(["sizes"] if sizes else [])],
                            ["y"], mode=mode, coordinate_transformation_mode=transform, cubic_coeff_a=a)
    const = [("scales", np.array([1, 1, *scales], np.float32))] if sizes is None else \
        [("sizes", np.array([*shape[:2], *sizes], np.int64))]
    return make_model([node], [("x", shape)], [("y", None)], const, opset=19)


def _references_agree(model, feeds) -> bool:
    ort = onnxruntime_outputs(model, feeds)["y"]
    spec = ReferenceEvaluator(model).run(None, feeds)[0]
    return ort.shape == spec.shape and np.allclose(ort, spec, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["cubic", "linear", "nearest"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resize_converts_right_or_refuses(tmp_path, mode, transform):
    converted_count = 0
    for shape in SHAPES:
        for target in [dict(scales=s) for s in SCALES] + [dict(sizes=s) for s in SIZES]:
            model = _model(shape, transform, mode=mode, **target)
            converted_count += _converts_right_or_refuses(tmp_path, model, f"{shape} {target}")
    assert converted_count >= MIN_CONVERTED.get((mode, transform), 3)


def _converts_right_or_refuses(tmp_path, model, what) -> bool:
    feeds = random_inputs(model)
    try:
        converted, got = run_converted_in_ncnn(model, feeds, tmp_path)
    except ConversionError as exc:
        assert "\n" not in str(exc)
        return False
    if not _references_agree(model, feeds):
        mode = next(a.s.decode() for a in model.graph.node[0].attribute if a.name == "mode")
        warned = [w for w in converted.graph.warnings if "in the ONNX spec (and torch)" in w]
        assert mode == "nearest" and warned, f"{what}: converted where onnxruntime and the spec part, unwarned"
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(got["y"].reshape(want.shape), want, rtol=1e-3, atol=1e-4, err_msg=what)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    np.testing.assert_allclose(ours[io["outputs"][0]["ncnn"]].reshape(want.shape), want,
                               rtol=1e-3, atol=1e-4, err_msg=what)
    return True


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
        with pytest.raises(ConversionError, match=f"{transform}.* ONNX spec"):
            convert(model)
    else:
        convert(model)


def test_cubic_coeff_a_other_than_ncnns_runs_as_products(tmp_path):
    """No Interp weights for a = -0.5: onnxruntime's (and the spec's) matrices as MatMuls."""
    assert _converts_right_or_refuses(tmp_path, _model((1, 1, 4, 4), "half_pixel", scales=(2.0, 2.0), a=-0.5), "a=-0.5")


@pytest.mark.parametrize("mode,transform,target,message", [
    ("linear", "half_pixel", dict(scales=(1.1, 1.2)), "keep every extent: onnxruntime copies the input"),
    ("cubic", "pytorch_half_pixel", dict(sizes=(1, 4)), "to an extent of 1 on axis 2: the ONNX spec samples at -0.5"),
])
def test_other_places_the_references_part_are_refused(mode, transform, target, message):
    model = _model((1, 1, 4, 4), transform, mode=mode, **target)
    assert not _references_agree(model, random_inputs(model))
    with pytest.raises(ConversionError, match=message):
        convert(model)
